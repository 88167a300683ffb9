from _common import Builder

b = Builder("de")

# ---------------- same_fact ----------------
b.sf("punctuation",
     "Frau Albers möchte Rechnungen nur per Post erhalten.",
     "Frau Albers möchte Rechnungen nur per Post erhalten!",
     "frau albers möchte rechnungen nur per post erhalten")
b.sf("punctuation",
     "Kunde 30817 zahlt per SEPA-Lastschrift.",
     "Kunde 30817 zahlt per SEPA-Lastschrift")
b.sf("punctuation",
     "Jens wird geduzt, er mag kein „Sie“.",
     "Jens wird geduzt; er mag kein \"Sie\".")
b.sf("punctuation",
     "Das Team Logistik hat freitags ab 14 Uhr keine Meetings.",
     "Das Team Logistik hat freitags ab 14 Uhr keine Meetings!")
b.sf("punctuation",
     "Server-Wartung: jeden ersten Dienstag im Monat, 22:00 Uhr.",
     "Server-Wartung – jeden ersten Dienstag im Monat, 22:00 Uhr",
     "Server-Wartung: Jeden ersten Dienstag im Monat, 22:00 Uhr.")
b.sf("adverb",
     "Herr Yilmaz bevorzugt Termine am Vormittag.",
     "Herr Yilmaz bevorzugt eindeutig Termine am Vormittag.")
b.sf("adverb",
     "Die Nutzerin trinkt keinen Alkohol.",
     "Die Nutzerin trinkt überhaupt keinen Alkohol.",
     "Die Nutzerin trinkt tatsächlich keinen Alkohol.")
b.sf("adverb",
     "Das Projekt Hafenblick läuft über das Budget der Abteilung Vertrieb.",
     "Das Projekt Hafenblick läuft weiterhin über das Budget der Abteilung Vertrieb.")
b.sf("adverb",
     "Klara will die Angebote auf Deutsch.",
     "Klara will die Angebote unbedingt auf Deutsch.")
b.sf("adverb",
     "Der Kunde nutzt SAP Business One.",
     "Der Kunde nutzt nach wie vor SAP Business One.")
b.sf("filler",
     "Hinweis: Lieferungen an Filiale 12 nur über die Rampe hinten.",
     "Lieferungen an Filiale 12 nur über die Rampe hinten.")
b.sf("filler",
     "Bitte beachten: Tobias ist Vegetarier.",
     "Tobias ist Vegetarier.",
     "Tobias ist übrigens Vegetarier.")
b.sf("filler",
     "Die Kundin hat ein Premium-Konto.",
     "Kundin hat Premium-Konto.")
b.sf("filler",
     "Merke: Rückrufe an Herrn Brandt erst nach 16 Uhr.",
     "Rückrufe an Herrn Brandt erst nach 16 Uhr.")
b.sf("filler",
     "Frau Weiß möchte ja eine Kopie aller Verträge.",
     "Frau Weiß möchte eine Kopie aller Verträge.")
b.sf("word_order",
     "Freitags arbeitet Miriam im Homeoffice.",
     "Miriam arbeitet freitags im Homeoffice.",
     "Im Homeoffice arbeitet Miriam freitags.")
b.sf("word_order",
     "Für alle Auslandsreisen braucht Herr Kaya eine Genehmigung vom Vorstand.",
     "Herr Kaya braucht für alle Auslandsreisen eine Genehmigung vom Vorstand.")
b.sf("word_order",
     "Die Monatsabrechnung schickt die Buchhaltung an Frau Roth.",
     "Die Buchhaltung schickt die Monatsabrechnung an Frau Roth.")
b.sf("synonym",
     "Der Kunde möchte sein Abo kündigen.",
     "Der Kunde möchte sein Abonnement kündigen.")
b.sf("synonym",
     "Lukas fährt mit dem Fahrrad zur Arbeit.",
     "Lukas fährt mit dem Rad zur Arbeit.")
b.sf("synonym",
     "Die Lieferung für Bestellung 5521 verspätet sich.",
     "Die Lieferung für Bestellung 5521 verzögert sich.",
     "Die Zustellung für Bestellung 5521 verzögert sich.")
b.sf("synonym",
     "Herr Lange ist der Ansprechpartner für Reklamationen.",
     "Herr Lange ist der Ansprechpartner für Beschwerden.",
     comment="Reklamation (complaint about goods) vs Beschwerde (any complaint) is near-synonymous")
b.sf("paraphrase",
     "Anja spricht kein Englisch, Unterlagen bitte nur auf Deutsch.",
     "Englisch ist für Anja keine Option, sie spricht es nicht. Unterlagen bitte nur auf Deutsch.")
b.sf("paraphrase",
     "Konto 6120 hat ein Zahlungsziel von 14 Tagen.",
     "Rechnungen an Konto 6120 sind innerhalb von 14 Tagen fällig.",
     "Für Konto 6120 gilt: zahlbar binnen 14 Tagen.")
b.sf("paraphrase",
     "Frau Öztürk ist seit 2019 Kundin.",
     "Seit 2019 kauft Frau Öztürk bei uns ein.",
     "Frau Öztürk gehört seit 2019 zu unseren Kunden.")

# ---------------- value_change ----------------
b.vc("word", "report frequency", "wöchentlich", "monatlich",
     "Herr Vogel bekommt den Lagerbericht wöchentlich.",
     "Herr Vogel bekommt den Lagerbericht monatlich.")
b.vc("word", "contact channel", "per E-Mail", "per SMS",
     "Frau Nowak möchte per E-Mail informiert werden.",
     "Frau Nowak bitte nur noch per SMS informieren.", reworded=True)
b.vc("word", "form of address", "Sie-Form", "Du-Form",
     "Im Chat mit Kunde Behrens die Sie-Form verwenden.",
     "Im Chat mit Kunde Behrens die Du-Form verwenden.")
b.vc("word", "document format", "PDF", "Word-Datei",
     "Die Personalabteilung will Arbeitszeugnisse als PDF.",
     "Die Personalabteilung will Arbeitszeugnisse als Word-Datei.")
b.vc("word", "answer language", "Englisch", "Deutsch",
     "Antworten an Nutzer 7781 bitte auf Englisch.",
     "Antworten an Nutzer 7781 bitte auf Deutsch.")
b.vc("word", "time of day", "abends", "morgens",
     "Moritz trainiert abends im Fitnessstudio.",
     "Moritz trainiert morgens im Fitnessstudio.")
b.vc("word", "app theme", "helle", "dunkle",
     "Die Nutzerin verwendet das helle Design in der App.",
     "Die Nutzerin verwendet das dunkle Design in der App.")
b.vc("word", "payment method", "per Rechnung", "per Kreditkarte",
     "Kunde 4420 zahlt per Rechnung.",
     "Kunde 4420 zahlt per Kreditkarte.")
b.vc("word", "train seat area", "Ruhebereich", "Familienbereich",
     "Frau Dietrich bucht im ICE immer einen Platz im Ruhebereich.",
     "Frau Dietrich bucht im ICE immer einen Platz im Familienbereich.")
b.vc("word", "newsletter format", "Kurzfassung", "Langfassung",
     "Nutzer will den Newsletter als Kurzfassung.",
     "Der Nutzer hätte den Newsletter lieber in der Langfassung.", reworded=True)
b.vc("word", "employment type", "Teilzeit", "Vollzeit",
     "Jana arbeitet in Teilzeit.",
     "Jana ist ab März in Vollzeit angestellt.", reworded=True)
b.vc("word", "ticket priority", "niedrig", "hoch",
     "Ticket 9034 hat Priorität niedrig.",
     "Ticket 9034 hat Priorität hoch.")
b.vc("name", "city of residence", "Leipzig", "Dresden",
     "Sebastian wohnt in Leipzig und kommt zweimal pro Woche ins Büro.",
     "Sebastian wohnt in Dresden und kommt zweimal pro Woche ins Büro.")
b.vc("name", "team lead", "Sabine Hartmann", "Aylin Demir",
     "Felix' Teamleiterin ist Sabine Hartmann.",
     "Felix' Teamleiterin ist Aylin Demir.")
b.vc("name", "code review tool", "GitLab", "Gerrit",
     "Das Entwicklerteam nutzt GitLab für Code-Reviews.",
     "Das Entwicklerteam nutzt Gerrit für Code-Reviews.")
b.vc("name", "car workshop", "Autohaus Köhler", "Autohaus Wendt",
     "Bevorzugte Werkstatt für den Firmenwagen: Autohaus Köhler.",
     "Den Firmenwagen bitte zum Autohaus Wendt in die Werkstatt bringen.", reworded=True)
b.vc("name", "contact person", "Herr Maier", "Herr Baumann",
     "Ansprechpartner bei der Stadtwerke Ulm GmbH ist Herr Maier.",
     "Ansprechpartner bei der Stadtwerke Ulm GmbH ist Herr Baumann.")
b.vc("number", "party budget", "3.000 €", "4.500 €",
     "Das Budget für die Weihnachtsfeier liegt bei 3.000 €.",
     "Das Budget für die Weihnachtsfeier liegt bei 4.500 €.")
b.vc("number", "credit limit", "10.000", "15.000",
     "Kreditlimit für Kunde 1187: 10.000 Euro.",
     "Kreditlimit für Kunde 1187: 15.000 Euro.")
b.vc("number", "meeting time", "10 Uhr", "11:30 Uhr",
     "Der Jour fixe mit dem Vertrieb ist um 10 Uhr.",
     "Der Jour fixe mit dem Vertrieb ist um 11:30 Uhr.")
b.vc("number", "number of children travelling", "2", "drei",
     "Familie Schulz reist mit 2 Kindern.",
     "Familie Schulz reist mit drei Kindern an.", reworded=True,
     comment="digit vs number word")
b.vc("negation", "postal advertising", "möchte", "möchte keine",
     "Herr Franke möchte Werbung per Post.",
     "Herr Franke möchte keine Werbung per Post.")
b.vc("negation", "loyalty programme", "nimmt am", "nimmt nicht am",
     "Die Kundin nimmt am Bonusprogramm teil.",
     "Die Kundin nimmt nicht am Bonusprogramm teil.")
b.vc("negation", "smoking", "raucht", "hat mit dem Rauchen aufgehört",
     "Paul raucht, im Hotel bitte ein Raucherzimmer buchen.",
     "Paul hat mit dem Rauchen aufgehört.", reworded=True)
b.vc("negation", "push notifications", "will Push", "will keine Push",
     "Nutzer will Push-Benachrichtigungen für jede neue Nachricht.",
     "Nutzer will keine Push-Benachrichtigungen mehr.", reworded=True)

# ---------------- different_subject ----------------
b.ds("customer number", "100482", "100428",
     "Kundennummer 100482 hat Anspruch auf Mengenrabatt.",
     "Kundennummer 100428 hat Anspruch auf Mengenrabatt.")
b.ds("order number", "77-1032", "77-1023",
     "Bestellung 77-1032 wurde vom Kunden storniert.",
     "Bestellung 77-1023 wurde per DPD versandt.", changed=True)
b.ds("ticket id", "#4512", "#4521",
     "Ticket #4512: Drucker im 3. OG druckt nicht.",
     "Ticket #4521: Drucker im 3. OG druckt nicht.",
     comment="two tickets may describe one incident, but they are distinct records")
b.ds("invoice id", "RE-2024-0193", "RE-2024-0139",
     "Rechnung RE-2024-0193 ist beglichen.",
     "Rechnung RE-2024-0139 ist beglichen.")
b.ds("person (title)", "Herr Becker", "Frau Becker",
     "Herr Becker aus dem Einkauf bevorzugt Telefonate.",
     "Frau Becker aus dem Einkauf bevorzugt Telefonate.")
b.ds("person name", "Jonas Keller", "Jonas Kessler",
     "Jonas Keller hat 25 Urlaubstage.",
     "Jonas Kessler hat 28 Urlaubstage.", changed=True)
b.ds("company name", "Müller Bau GmbH", "Müller Bauservice GmbH",
     "Müller Bau GmbH bekommt 3 % Skonto.",
     "Müller Bauservice GmbH bekommt 3 % Skonto.")
b.ds("email address", "k.schmidt@hafenlogistik.de", "k.schmitt@hafenlogistik.de",
     "k.schmidt@hafenlogistik.de erhält die Tourenpläne.",
     "k.schmitt@hafenlogistik.de erhält die Lohnabrechnungen.", changed=True)
b.ds("url", "wiki.nordlicht-it.de", "wiki.nordlicht-it.com",
     "Das Wiki unter wiki.nordlicht-it.de ist nur intern erreichbar.",
     "Das Wiki unter wiki.nordlicht-it.com ist nur intern erreichbar.")
b.ds("training date", "12.03.", "21.03.",
     "Die Schulung am 12.03. findet in Raum A statt.",
     "Die Schulung am 21.03. findet online statt.", changed=True)
b.ds("delivery date", "02.09.2024", "09.02.2024",
     "Die Lieferung vom 02.09.2024 war unvollständig.",
     "Die Lieferung vom 09.02.2024 war unvollständig.")
b.ds("personnel number", "P-3381", "P-3318",
     "Mitarbeiter P-3381 arbeitet im Schichtdienst.",
     "Mitarbeiter P-3318 arbeitet in Gleitzeit.", changed=True)
b.ds("licence plate", "M-KL 4471", "M-KL 4417",
     "Das Fahrzeug M-KL 4471 muss zum TÜV.",
     "Das Fahrzeug M-KL 4417 muss zum TÜV.")
b.ds("branch", "Hamburg-Altona", "Hamburg-Harburg",
     "Filiale Hamburg-Altona öffnet samstags um 9 Uhr.",
     "Filiale Hamburg-Harburg öffnet samstags um 10 Uhr.", changed=True)
b.ds("contract number", "V-88012", "V-88021",
     "Vertrag V-88012 verlängert sich automatisch um ein Jahr.",
     "Vertrag V-88021 verlängert sich automatisch um ein Jahr.")
b.ds("project name", "Elbbrücke", "Elbtunnel",
     "Projekt Elbbrücke wird von Frau Lorenz geleitet.",
     "Projekt Elbtunnel wird von Herrn Kühn geleitet.", changed=True)
b.ds("article number", "3300-12", "3300-21",
     "Artikel 3300-12 ist nur in Schwarz lieferbar.",
     "Artikel 3300-21 ist nur in Schwarz lieferbar.")
b.ds("booking reference", "HB-5567", "HB-5576",
     "Buchung HB-5567 beinhaltet Frühstück und Parkplatz.",
     "Buchung HB-5576 beinhaltet kein Frühstück.", changed=True)
b.ds("meeting room", "Zugspitze", "Watzmann",
     "Besprechungsraum Zugspitze hat keine Videokamera.",
     "Besprechungsraum Watzmann hat keine Videokamera.")
b.ds("username", "mweber", "mwebert",
     "Benutzer mweber hat Admin-Rechte im CRM.",
     "Benutzer mwebert hat Leserechte im CRM.", changed=True)
b.ds("department", "Marketing", "Controlling",
     "Lena Hoffmann (Marketing) arbeitet remote.",
     "Lena Hoffmann (Controlling) arbeitet remote.",
     comment="two people with the same name")
b.ds("phone number", "0800 123 4567", "0800 123 4576",
     "Die Hotline 0800 123 4567 ist rund um die Uhr besetzt.",
     "Die Hotline 0800 123 4576 ist rund um die Uhr besetzt.")
b.ds("child's name", "Emma", "Emil",
     "Emma, die Tochter von Frau Graf, ist gegen Nüsse allergisch.",
     "Emil, der Sohn von Frau Graf, ist laktoseintolerant.", changed=True)
b.ds("hostname", "web-fra-02", "web-fra-12",
     "Der Server web-fra-02 steht im Rechenzentrum Frankfurt.",
     "Der Server web-fra-12 wird im März abgeschaltet.", changed=True)
b.ds("client number", "0042", "0024",
     "Mandant 0042 bucht in Euro.",
     "Mandant 0024 bucht in Schweizer Franken.", changed=True)

# ---------------- complementary ----------------
b.co("Frau Kraus", "Frau Kraus spricht fließend Polnisch.",
     "Frau Kraus spricht fließend Italienisch.", values=["Polnisch", "Italienisch"])
b.co("user", "Nutzer trinkt gern Kräutertee, bei Besuchen im Büro anbieten.", "Nutzer trinkt gern Cappuccino, bei Besuchen im Büro anbieten.",
     values=["Kräutertee", "Cappuccino"])
b.co("Familie Brandt", "Familie Brandt hat einen Hund.", "Familie Brandt hat zwei Katzen.",
     values=["einen Hund", "zwei Katzen"])
b.co("data team", "Das Data-Team wertet die Umfragen mit Python aus.",
     "Das Data-Team wertet die Umfragen mit R aus.", values=["Python", "R"])
b.co("Herr Lindner", "Herr Lindner war schon in Lissabon.", "Herr Lindner war schon in Krakau.",
     values=["Lissabon", "Krakau"])
b.co("Ole", "Ole hat einen Führerschein der Klasse B.", "Ole hat einen Führerschein der Klasse C.",
     values=["Klasse B", "Klasse C"])
b.co("customer 2290", "Kundin 2290 hat das Modul Lager gebucht.",
     "Kundin 2290 hat das Modul Versand gebucht.", values=["Lager", "Versand"])
b.co("shop", "Der Shop akzeptiert Zahlungen mit Klarna.",
     "Der Shop akzeptiert Zahlungen mit Apple Pay.", values=["Klarna", "Apple Pay"])
b.co("Greta", "Greta singt seit Jahren im Kirchenchor.", "Greta singt seit Jahren in einer Jazzband.",
     values=["im Kirchenchor", "in einer Jazzband"])
b.co("Herr Aydın", "Herr Aydın interessiert sich für Weiterbildungen zum Thema Projektmanagement.",
     "Herr Aydın interessiert sich für Weiterbildungen zum Thema Datenschutz.",
     values=["Projektmanagement", "Datenschutz"])
b.co("carrier", "Die Spedition fährt auch nach Österreich.",
     "Die Spedition fährt auch nach Tschechien.", values=["Österreich", "Tschechien"])
b.co("Frau Pohl", "Frau Pohl ist allergisch gegen Pollen, Reiseapotheke entsprechend packen.",
     "Frau Pohl ist allergisch gegen Penicillin, Reiseapotheke entsprechend packen.", values=["Pollen", "Penicillin"])
b.co("Herr Wolf", "Herr Wolf bevorzugt Rückrufe per Telefon.", "Herr Wolf wohnt in Bremen.")
b.co("account 5530", "Konto 5530 läuft auf den Tarif Business.", "Konto 5530 hat drei Unterkonten.")
b.co("Carina", "Carina ist Linkshänderin und braucht am Arbeitsplatz eine passende Maus.", "Carina fährt einen Elektro-Dienstwagen.")
b.co("customer", "Das Geschäftsjahr der Kundin beginnt im Juli.",
     "Die Kundin verlangt für jede Bestellung eine Bestellnummer auf der Rechnung.")
b.co("Thomas", "Thomas leitet das Team Infrastruktur.", "Thomas ist montags nicht erreichbar.")
b.co("user", "Nutzerin isst kein Schweinefleisch, bei Rezeptvorschlägen beachten.", "Nutzerin läuft vor der Arbeit fünf Kilometer.")
b.co("ticket 6621", "Ticket 6621 liegt bei Team Netzwerk.",
     "Ticket 6621 betrifft nur den Standort Kassel.")
b.co("Birgit", "Birgit hat am 17. Mai Geburtstag.", "Birgit mag keine Überraschungspartys.")
b.co("test database", "Die Testdatenbank wird jede Nacht gesichert.",
     "Die Testdatenbank läuft auf MariaDB 10.11.")
b.co("Herr Schubert", "Herr Schubert hat zwei Töchter.", "Herr Schubert pendelt mit der S-Bahn.")
b.co("Brenner AG", "Ansprechpartnerin der Brenner AG für den Einkauf ist Frau Vogt.",
     "Die Brenner AG sitzt in Stuttgart.")
b.co("user", "Nutzer programmiert beruflich in Java. Beispiele bitte in Java.",
     "Nutzer spielt in seiner Freizeit Schach im Verein.")
b.co("Frau Engel", "Frau Engel braucht auf Dienstreisen immer ein Nichtraucherzimmer.",
     "Frau Engel rechnet Reisekosten über die Kostenstelle 4410 ab.")

ITEMS = b.items
