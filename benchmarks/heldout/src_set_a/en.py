from _common import Builder

b = Builder("en")

# ---------------- same_fact ----------------
# punctuation
b.sf("punctuation",
     "User prefers dark mode in the dashboard.",
     "User prefers dark mode in the dashboard!",
     "user prefers dark mode in the dashboard")
b.sf("punctuation",
     "Customer's billing contact is Priya Nair (priya.nair@hollowoak.io).",
     "Customer's billing contact is Priya Nair (priya.nair@hollowoak.io)")
b.sf("punctuation",
     "Account 4411: invoices go out on the 1st of each month.",
     "Account 4411 - invoices go out on the 1st of each month.")
b.sf("punctuation",
     "Marco is allergic to peanuts; avoid suggesting Thai takeout.",
     "Marco is allergic to peanuts. Avoid suggesting Thai takeout.")
b.sf("punctuation",
     "Payments team on-call shifts start Mondays at 09:00 UTC.",
     "Payments team on-call shifts start Mondays, at 09:00 UTC",
     "payments team on-call shifts start mondays at 09:00 utc.")
# adverb
b.sf("adverb",
     "Dana prefers phone calls over email.",
     "Dana really prefers phone calls over email.")
b.sf("adverb",
     "The client wants all quotes in euros.",
     "The client always wants all quotes in euros.",
     "The client definitely wants all quotes in euros.")
b.sf("adverb",
     "User's work laptop runs Ubuntu 22.04.",
     "User's work laptop still runs Ubuntu 22.04.")
b.sf("adverb",
     "Order #88120 was shipped via DHL Express.",
     "Order #88120 was indeed shipped via DHL Express.")
b.sf("adverb",
     "Mr. Okafor needs wheelchair-accessible hotel rooms.",
     "Mr. Okafor absolutely needs wheelchair-accessible hotel rooms.")
# filler
b.sf("filler",
     "Note: the customer is on the Enterprise plan.",
     "The customer is on the Enterprise plan.")
b.sf("filler",
     "User likes short answers with bullet points.",
     "Just so you know, the user likes short answers with bullet points.",
     "Reminder: user likes short answers with bullet points.")
b.sf("filler",
     "Please remember that Lena works from the Berlin office on Thursdays.",
     "Lena works from the Berlin office on Thursdays.")
b.sf("filler",
     "Ticket 5532 concerns a failed SSO login for Acme Corp.",
     "FYI, ticket 5532 concerns a failed SSO login for Acme Corp.")
b.sf("filler",
     "The user's preferred airline is KLM.",
     "User's preferred airline is KLM.")
# word_order
b.sf("word_order",
     "On Fridays, Tom leaves the office at 3 pm.",
     "Tom leaves the office at 3 pm on Fridays.",
     "Tom, on Fridays, leaves the office at 3 pm.")
b.sf("word_order",
     "For every deployment, the staging cluster must be checked first.",
     "The staging cluster must be checked first for every deployment.")
b.sf("word_order",
     "Before every meeting, Sofia wants the agenda by email.",
     "Sofia wants the agenda by email before every meeting.")
# synonym
b.sf("synonym",
     "Customer wants to cancel the subscription.",
     "Customer wants to terminate the subscription.",
     "Customer wants to end the subscription.")
b.sf("synonym",
     "User dislikes long emails. Keep replies to a few lines.",
     "User dislikes lengthy emails. Keep replies to a few lines.")
b.sf("synonym",
     "The vendor's invoice for April is overdue.",
     "The vendor's bill for April is past due.")
b.sf("synonym",
     "Aiko's flight to Osaka departs from gate B12.",
     "Aiko's plane to Osaka leaves from gate B12.",
     "Aiko's flight to Osaka leaves from gate B12.")
# paraphrase
b.sf("paraphrase",
     "User is vegetarian.",
     "The user doesn't eat meat.",
     "User follows a vegetarian diet.",
     comment="'doesn't eat meat' is slightly weaker than 'vegetarian' (fish)")
b.sf("paraphrase",
     "Account 7702 has a 30-day payment term.",
     "Invoices for account 7702 are due 30 days after issue.")
b.sf("paraphrase",
     "Jonas is the engineering manager of the mobile team.",
     "The mobile team reports to Jonas, their engineering manager.")

# ---------------- value_change ----------------
b.vc("word", "report frequency", "weekly", "monthly",
     "Send Mr. Patel the usage report weekly.",
     "Send Mr. Patel the usage report monthly.")
b.vc("word", "contact channel", "email", "phone",
     "Customer prefers to be contacted by email.",
     "Customer prefers to be contacted by phone.")
b.vc("word", "tone", "formal", "casual",
     "User wants replies in a formal tone.",
     "User wants replies in a casual tone.")
b.vc("word", "export format", "CSV", "XLSX",
     "Finance team wants the quarterly export as CSV.",
     "Finance team wants the quarterly export as XLSX.")
b.vc("word", "answer language", "English", "Mandarin",
     "Answer Mei's questions in English.",
     "Answer Mei's questions in Mandarin.")
b.vc("word", "meeting time of day", "morning", "afternoon",
     "Ravi prefers meetings in the morning.",
     "Ravi prefers meetings in the afternoon.")
b.vc("word", "editor theme", "light", "dark",
     "User has the code editor set to the light theme.",
     "User has the code editor set to the dark theme.")
b.vc("word", "seat preference", "aisle", "window",
     "Ines always books an aisle seat on trains.",
     "Ines always books a window seat on trains.",
     comment="article an/a also changes")
b.vc("word", "shipping method", "standard", "express",
     "Account 3390 uses standard shipping for all orders.",
     "For account 3390, ship all orders express.", reworded=True)
b.vc("word", "task status", "blocked", "done",
     "The data migration task for Vela Health is blocked.",
     "The data migration task for Vela Health is done.")
b.vc("word", "summary length", "detailed", "brief",
     "Helen likes her meeting summaries detailed.",
     "Helen wants her meeting summaries brief, please.", reworded=True)
b.vc("word", "subscription plan", "Basic", "Premium",
     "The customer's plan is Basic.",
     "Customer upgraded; their plan is Premium.", reworded=True)
b.vc("name", "city of residence", "Accra", "Kumasi",
     "Kofi lives in Accra, so schedule his calls in GMT.",
     "Kofi lives in Kumasi, so schedule his calls in GMT.")
b.vc("name", "manager", "Daniel Reyes", "Yuki Tanaka",
     "Sara's manager is Daniel Reyes.",
     "Sara's manager is Yuki Tanaka.")
b.vc("name", "task tracker", "Trello", "Asana",
     "The design team tracks its work in Trello.",
     "The design team tracks its work in Asana.")
b.vc("name", "hotel chain", "Hilton", "Marriott",
     "Preferred hotel chain for Mr. Lindqvist: Hilton.",
     "Mr. Lindqvist prefers to stay at Marriott hotels.", reworded=True)
b.vc("name", "account owner", "Omar Haddad", "Chloe Martin",
     "The account owner for Brightline Ltd is Omar Haddad.",
     "The account owner for Brightline Ltd is Chloe Martin.")
b.vc("number", "offsite budget", "$5,000", "$8,500",
     "Team offsite budget is $5,000.",
     "Team offsite budget is $8,500.")
b.vc("number", "API rate limit", "100", "250",
     "API rate limit for account 2207 is 100 requests per minute.",
     "API rate limit for account 2207 is 250 requests per minute.")
b.vc("number", "standup start time", "9:30", "10:15",
     "The daily standup starts at 9:30.",
     "The daily standup starts at 10:15.")
b.vc("number", "child's age", "7", "8",
     "Noah's daughter is 7 years old.",
     "Noah's daughter turned 8.", reworded=True)
b.vc("negation", "daily summary email", "wants", "does not want",
     "User wants a daily summary email.",
     "User does not want a daily summary email.")
b.vc("negation", "newsletter subscription", "is subscribed", "is not subscribed",
     "Customer is subscribed to the marketing newsletter.",
     "Customer is not subscribed to the marketing newsletter.")
b.vc("negation", "call reminders", "wants", "no longer wants",
     "Paulo wants a reminder before every client call.",
     "Paulo no longer wants reminders before client calls.", reworded=True)
b.vc("negation", "drinks coffee", "drinks", "has stopped drinking",
     "Lucía drinks coffee in the morning.",
     "Lucía has stopped drinking coffee.", reworded=True)

# ---------------- different_subject ----------------
b.ds("account number", "4471", "4417",
     "Account 4471 is on the annual billing plan.",
     "Account 4417 is on the annual billing plan.")
b.ds("order number", "#20931", "#20932",
     "Order #20931 is awaiting pickup at the depot.",
     "Order #20932 is out for delivery.", changed=True)
b.ds("ticket id", "SUP-1182", "SUP-1183",
     "Ticket SUP-1182 is about a password reset loop. The user is locked out of the admin console.",
     "Ticket SUP-1183 is about a password reset loop. The user is locked out of the admin console.")
b.ds("invoice id", "INV-2024-0042", "INV-2024-0043",
     "INV-2024-0042 was paid in full.",
     "INV-2024-0043 was paid in full.")
b.ds("person name", "Anna Kowalski", "Hannah Kowalski",
     "Anna Kowalski prefers Slack messages over email.",
     "Hannah Kowalski prefers Slack messages over email.")
b.ds("person name", "Peter", "Petra",
     "Peter's preferred language is German.",
     "Petra's preferred language is Dutch.", changed=True)
b.ds("company name", "Northwind Traders", "Northwind Logistics",
     "Northwind Traders pays by wire transfer.",
     "Northwind Logistics pays by credit card.", changed=True)
b.ds("email address", "jane.doe@fabrikam.com", "jane.doe@contoso.com",
     "jane.doe@fabrikam.com should receive the weekly outage digest.",
     "jane.doe@contoso.com should receive the weekly outage digest.")
b.ds("url", "status.orbital.io", "status.orbitel.io",
     "The status page at status.orbital.io is maintained by the SRE team.",
     "The status page at status.orbitel.io is maintained by the SRE team.")
b.ds("invoice date", "2024-03-05", "2024-05-03",
     "The invoice dated 2024-03-05 includes a 10% discount.",
     "The invoice dated 2024-05-03 includes a 15% discount.", changed=True)
b.ds("meeting date", "14 June", "14 July",
     "Quarterly review with Globex on 14 June is confirmed.",
     "Quarterly review with Globex on 14 July is confirmed.")
b.ds("employee id", "E-10233", "E-10238",
     "Employee E-10233 has 12 vacation days left.",
     "Employee E-10238 has 4 vacation days left.", changed=True)
b.ds("project code", "ATLAS-7", "ATLAS-9",
     "Project ATLAS-7 runs on PostgreSQL 15.",
     "Project ATLAS-9 runs on PostgreSQL 15.")
b.ds("hostname", "db-prod-03", "db-prod-05",
     "Server db-prod-03 still needs the kernel patch.",
     "Server db-prod-05 has the kernel patch applied.", changed=True)
b.ds("booking reference", "QX7P2L", "QX7P2K",
     "Booking ref QX7P2L is a non-refundable fare.",
     "Booking ref QX7P2K is a refundable fare.", changed=True)
b.ds("phone number", "+44 20 7946 0321", "+44 20 7946 0812",
     "The number +44 20 7946 0321 belongs to the London front desk.",
     "The number +44 20 7946 0812 belongs to the London front desk.",
     comment="both numbers can belong to the same desk")
b.ds("department", "sales", "legal",
     "Maria Lopez (sales) wants the pricing deck.",
     "Maria Lopez (legal) wants the contract template.", changed=True,
     comment="two people with the same name, told apart by department")
b.ds("customer id", "C-5521", "C-5512",
     "Customer C-5521 is eligible for the loyalty discount.",
     "Customer C-5512 is not eligible for the loyalty discount.", changed=True)
b.ds("repository", "acme/billing-api", "acme/billing-ui",
     "The repo acme/billing-api deploys on every merge to main.",
     "The repo acme/billing-ui deploys on every merge to main.")
b.ds("person title", "Mrs. Weber", "Mr. Weber",
     "Mrs. Weber is booked on flight LH 402.",
     "Mr. Weber is booked on flight LH 402.")
b.ds("pet name", "Luna", "Milo",
     "Luna, the user's older cat, needs a special kidney diet.",
     "Milo, the user's younger cat, needs a special kidney diet.")
b.ds("sku", "TX-220-BLK", "TX-220-WHT",
     "SKU TX-220-BLK is out of stock.",
     "SKU TX-220-WHT is back in stock.", changed=True)
b.ds("contract number", "2023/118", "2023/181",
     "Contract 2023/118 renews automatically in January.",
     "Contract 2023/181 ends in January without renewal.", changed=True)
b.ds("forum handle", "@dmitri_k", "@dmitri_kv",
     "@dmitri_k on the community forum is a verified partner.",
     "@dmitri_kv on the community forum is a verified partner.")
b.ds("meeting room", "4B", "4D",
     "Meeting room 4B has a broken projector.",
     "Meeting room 4D has a working projector.", changed=True)

# ---------------- complementary ----------------
b.co("Elena", "Elena speaks German well enough to handle support calls.", "Elena speaks French well enough to handle support calls.",
     values=["German", "French"])
b.co("user", "User likes green tea in the afternoon.", "User likes espresso in the afternoon.",
     values=["green tea", "espresso"])
b.co("customer", "Customer has a dog.", "Customer has a cat.",
     values=["dog", "cat"])
b.co("platform team", "The platform team uses Jira.", "The platform team uses GitHub.",
     values=["Jira", "GitHub"])
b.co("Ahmed", "Ahmed has visited Rome before, so he doesn't need a city guide there.", "Ahmed has visited Oslo before, so he doesn't need a city guide there.",
     values=["Rome", "Oslo"])
b.co("account 6610", "Account 6610 has a support contract for the EU region.",
     "Account 6610 has a support contract for the APAC region.",
     values=["EU", "APAC"])
b.co("Kim", "Kim is certified in AWS.", "Kim is certified in Azure.",
     values=["AWS", "Azure"])
b.co("client", "The client accepts payment by PayPal.",
     "The client accepts payment by bank transfer.",
     values=["PayPal", "bank transfer"])
b.co("Bruno", "Bruno plays the guitar at his church on Sundays.", "Bruno plays the piano at his church on Sundays.",
     values=["guitar", "piano"])
b.co("user", "User is interested in machine learning courses.",
     "User is interested in photography courses.",
     values=["machine learning", "photography"])
b.co("Lisa", "Lisa sits on the hiring panel for backend roles.",
     "Lisa sits on the hiring panel for data roles.",
     values=["backend", "data"])
b.co("shop", "The shop ships to Canada.", "The shop ships to Mexico.",
     values=["Canada", "Mexico"])
b.co("Priya", "Priya prefers email for project updates.", "Priya lives in Lisbon.")
b.co("account 8832", "Account 8832 is on the Pro plan.", "Account 8832 has two admin users.")
b.co("Mr. Chen", "Mr. Chen is left-handed.", "Mr. Chen wants an aisle seat on long flights.")
b.co("customer", "The customer's fiscal year starts in April.",
     "The customer requires a purchase order for every invoice.")
b.co("Olga", "Olga is the QA team lead.", "Olga works remotely from Tallinn.")
b.co("user", "User is training for a marathon.", "User avoids dairy.")
b.co("ticket 7781", "Ticket 7781 is assigned to Felix.",
     "Ticket 7781 was reported by a premium customer.")
b.co("Greta", "Greta's birthday is 3 October.", "Greta prefers vegan restaurants.")
b.co("staging database", "The staging database is backed up nightly.",
     "The staging database runs on PostgreSQL 14.")
b.co("Samir", "Samir has two children and leaves at 4:30 pm on school days.", "Samir commutes by bike, so he prefers offices with showers.")
b.co("Acme Corp", "Acme Corp's procurement contact is Joan Blake.",
     "Acme Corp is headquartered in Rotterdam.")
b.co("user", "User writes Rust at work. Prefers code examples in Rust.",
     "User hosts a jazz podcast on weekends.")
b.co("Hiroshi", "Hiroshi's work visa expires in 2026.",
     "Hiroshi needs invoices addressed to the Tokyo office.")

ITEMS = b.items
