from _common import Builder

b = Builder("fr")

# ---------------- same_fact ----------------
b.sf("punctuation",
     "Mme Lefèvre veut être rappelée avant midi !",
     "Mme Lefèvre veut être rappelée avant midi!",
     "Mme Lefèvre veut être rappelée avant midi.",
     comment="French spacing before '!' vs none")
b.sf("punctuation",
     "Client 55102 : paiement par prélèvement uniquement.",
     "Client 55102: paiement par prélèvement uniquement.")
b.sf("punctuation",
     "Hugo refuse les visios : sa connexion à la campagne est trop lente.",
     "Hugo refuse les visios ; sa connexion à la campagne est trop lente.")
b.sf("punctuation",
     "Le dossier « Résidence Les Tilleuls » est suivi par Karim.",
     "Le dossier \"Résidence Les Tilleuls\" est suivi par Karim.")
b.sf("punctuation",
     "La boulangerie Martin est livrée à 5 h 30.",
     "La boulangerie Martin est livrée à 5 h 30",
     "la boulangerie Martin est livrée à 5 h 30.")
b.sf("adverb",
     "M. Benali préfère le vouvoiement.",
     "M. Benali préfère vraiment le vouvoiement.")
b.sf("adverb",
     "Chloé est allergique aux fruits de mer.",
     "Chloé est vraiment allergique aux fruits de mer.",
     "Chloé est bel et bien allergique aux fruits de mer.")
b.sf("adverb",
     "L'agence de Nantes utilise Windows 10.",
     "L'agence de Nantes utilise encore Windows 10.")
b.sf("adverb",
     "Le colis 7Y40213 a été remis en point relais.",
     "Le colis 7Y40213 a bien été remis en point relais.")
b.sf("adverb",
     "Le locataire du 3e étage paie son loyer par virement.",
     "Le locataire du 3e étage paie toujours son loyer par virement.")
b.sf("filler",
     "À noter : l'élève Théo a un tiers-temps aux examens.",
     "L'élève Théo a un tiers-temps aux examens.")
b.sf("filler",
     "Rappel : la cantine de l'école ferme le mercredi.",
     "La cantine de l'école ferme le mercredi.",
     "Pour info, la cantine de l'école ferme le mercredi.")
b.sf("filler",
     "Merci de noter que Mme Girard est en télétravail le lundi.",
     "Mme Girard est en télétravail le lundi.")
b.sf("filler",
     "Alors, en fait, le ticket 902 concerne une panne de box.",
     "Le ticket 902 concerne une panne de box.")
b.sf("filler",
     "Important : Yasmine ne boit pas d'alcool.",
     "Yasmine ne boit pas d'alcool.",
     "Attention : Yasmine ne boit pas d'alcool.")
b.sf("word_order",
     "Pour les devis supérieurs à 10 000 €, la signature du directeur est obligatoire.",
     "La signature du directeur est obligatoire pour les devis supérieurs à 10 000 €.",
     "La signature du directeur, pour les devis supérieurs à 10 000 €, est obligatoire.")
b.sf("word_order",
     "Le thé, Margaux le boit sans sucre.",
     "Margaux boit le thé sans sucre.")
b.sf("word_order",
     "En réunion, Paul préfère prendre ses notes sur papier.",
     "Paul préfère prendre ses notes sur papier en réunion.")
b.sf("synonym",
     "Le client veut résilier son abonnement.",
     "Le client souhaite résilier son abonnement.")
b.sf("synonym",
     "Nadia se rend au travail en vélo.",
     "Nadia va au boulot à vélo.",
     "Nadia se rend au travail à bicyclette.",
     comment="register shift (boulot)")
b.sf("synonym",
     "L'ordinateur portable de Lucas est en panne.",
     "Le laptop de Lucas est en panne.")
b.sf("synonym",
     "Le déménagement de l'entrepôt est prévu pour juin.",
     "Le transfert de l'entrepôt est prévu pour juin.")
b.sf("paraphrase",
     "Le compte 4400 règle ses factures à 45 jours.",
     "Les factures du compte 4400 sont payées 45 jours après émission.")
b.sf("paraphrase",
     "Amélie est la manager de l'équipe support.",
     "L'équipe support est dirigée par Amélie.",
     "C'est Amélie qui encadre l'équipe support.")
b.sf("paraphrase",
     "L'utilisateur est végétalien.",
     "L'utilisateur ne consomme aucun produit d'origine animale.")

# ---------------- value_change ----------------
b.vc("word", "statement frequency", "chaque trimestre", "chaque mois",
     "Envoyer le relevé de compte à M. Garnier chaque trimestre.",
     "Envoyer le relevé de compte à M. Garnier chaque mois.")
b.vc("word", "contact channel", "par courrier", "par téléphone",
     "Mme Chevalier souhaite être contactée par courrier.",
     "Mme Chevalier souhaite être contactée par téléphone.")
b.vc("word", "form of address", "tutoiement", "vouvoiement",
     "Avec ce client, utiliser le tutoiement.",
     "Avec ce client, utiliser le vouvoiement.")
b.vc("word", "document format", "papier", "numérique",
     "Le cabinet comptable veut les justificatifs en format papier.",
     "Le cabinet comptable veut les justificatifs en format numérique.")
b.vc("word", "answer language", "anglais", "français",
     "Répondre à Sven en anglais.",
     "Répondre à Sven en français.")
b.vc("word", "time of day", "le matin", "le soir",
     "Le cours de piano de Léa a lieu le matin.",
     "Le cours de piano de Léa a lieu le soir.")
b.vc("word", "display theme", "sombre", "clair",
     "Mode d'affichage de l'utilisatrice : thème sombre.",
     "Mode d'affichage de l'utilisatrice : thème clair.")
b.vc("word", "lease type", "meublé", "vide",
     "Type de bail pour l'appartement 12B : meublé.",
     "Type de bail pour l'appartement 12B : vide.")
b.vc("word", "delivery vehicle", "vélo", "scooter",
     "Le restaurant du quartier Saint-Michel fait la livraison à vélo.",
     "Les livraisons du restaurant du quartier Saint-Michel se font en scooter.", reworded=True)
b.vc("word", "claim status", "en cours d'expertise", "clôturé",
     "Le dossier de sinistre 88-314 est en cours d'expertise.",
     "Le dossier de sinistre 88-314 est clôturé.")
b.vc("word", "report length", "détaillés", "très courts",
     "Sylvie aime recevoir des comptes rendus détaillés.",
     "Sylvie veut des comptes rendus très courts.", reworded=True)
b.vc("word", "subscription plan", "Essentiel", "Premium",
     "Formule de l'abonné : Essentiel.",
     "L'abonné est passé à la formule Premium.", reworded=True)
b.vc("name", "city of residence", "Lyon", "Grenoble",
     "Antoine habite à Lyon et vient au bureau deux jours par semaine.",
     "Antoine habite à Grenoble et vient au bureau deux jours par semaine.")
b.vc("name", "internship tutor", "M. Dupuis", "M. Perrin",
     "Le tuteur de stage de Maëlle est M. Dupuis.",
     "Le tuteur de stage de Maëlle est M. Perrin.")
b.vc("name", "documentation tool", "Notion", "Confluence",
     "L'équipe produit rédige ses specs dans Notion.",
     "L'équipe produit rédige ses specs dans Confluence.")
b.vc("name", "departure station", "Lyon Part-Dieu", "Lyon Perrache",
     "Gare de départ habituelle de Mme Faure : Lyon Part-Dieu.",
     "Mme Faure prend le train à Lyon Perrache.", reworded=True)
b.vc("name", "family doctor", "Dr Morel", "Dr Lambert",
     "Le médecin traitant de M. Roussel est le Dr Morel.",
     "Le médecin traitant de M. Roussel est le Dr Lambert.")
b.vc("number", "seminar budget", "12 000 €", "15 000 €",
     "Le budget du séminaire est de 12 000 €.",
     "Le budget du séminaire est de 15 000 €.")
b.vc("number", "meal allowance", "20 €", "25 €",
     "Plafond de remboursement des frais de repas : 20 € par jour.",
     "Plafond de remboursement des frais de repas : 25 € par jour.")
b.vc("number", "meeting time", "14 h", "9 h 30",
     "Le point hebdo de l'équipe est à 14 h.",
     "Le point hebdo de l'équipe est à 9 h 30.")
b.vc("number", "child's age", "11", "12",
     "Le fils de Nathalie a 11 ans.",
     "Le fils de Nathalie a fêté ses 12 ans.", reworded=True)
b.vc("negation", "sales calls", "accepte", "n'accepte pas",
     "M. Fabre accepte les appels commerciaux.",
     "M. Fabre n'accepte pas les appels commerciaux.")
b.vc("negation", "school canteen", "mange", "ne mange pas",
     "L'élève mange à la cantine.",
     "L'élève ne mange pas à la cantine.")
b.vc("negation", "SMS login alerts", "veut une alerte", "ne veut plus d'alertes",
     "Inès veut une alerte SMS à chaque connexion.",
     "Inès ne veut plus d'alertes SMS.", reworded=True)
b.vc("negation", "uses mobile app", "utilise", "a désinstallé",
     "Le client utilise l'application mobile.",
     "Le client a désinstallé l'application mobile.", reworded=True)

# ---------------- different_subject ----------------
b.ds("insurance contract number", "4408127", "4408172",
     "Le contrat d'assurance n° 4408127 couvre le dégât des eaux.",
     "Le contrat d'assurance n° 4408172 couvre le dégât des eaux.")
b.ds("order number", "CMD-55019", "CMD-55091",
     "La commande CMD-55019 a été livrée en retard.",
     "La commande CMD-55091 a été livrée à l'heure.", changed=True)
b.ds("ticket id", "3391", "3319",
     "Le ticket 3391 concerne une imprimante bloquée au 2e étage.",
     "Le ticket 3319 concerne une imprimante bloquée au 2e étage.")
b.ds("invoice id", "FA-2023-1107", "FA-2023-1170",
     "La facture FA-2023-1107 est réglée.",
     "La facture FA-2023-1170 est réglée.")
b.ds("person name", "Camille Martin", "Camille Morin",
     "Camille Martin préfère les échanges par mail.",
     "Camille Morin préfère les échanges par mail.")
b.ds("person name", "Jean-Pierre", "Jean-Paul",
     "Jean-Pierre est végétarien.",
     "Jean-Paul mange de tout.", changed=True)
b.ds("company name", "Boulanger & Fils", "Boulanger & Associés",
     "La société Boulanger & Fils paie à réception.",
     "La société Boulanger & Associés paie à réception.")
b.ds("email address", "contact@gite-lesaulnes.fr", "contact@gite-lesaules.fr",
     "contact@gite-lesaulnes.fr reçoit les réservations.",
     "contact@gite-lesaules.fr reçoit les réclamations.", changed=True)
b.ds("url", "www.ecole-jules-ferry.fr", "www.college-jules-ferry.fr",
     "Le site www.ecole-jules-ferry.fr est hébergé chez OVH.",
     "Le site www.college-jules-ferry.fr est hébergé chez OVH.")
b.ds("visit date", "14/02", "24/02",
     "La visite de l'appartement du 14/02 est confirmée.",
     "La visite de l'appartement du 24/02 est annulée.", changed=True)
b.ds("instalment date", "01/06", "06/01",
     "L'échéance du 01/06 porte sur 450 €.",
     "L'échéance du 06/01 porte sur 450 €.")
b.ds("employee number", "10872", "10827",
     "Le salarié matricule 10872 est en CDI.",
     "Le salarié matricule 10827 est en CDD.", changed=True)
b.ds("licence plate", "GE-214-KT", "GE-241-KT",
     "Le véhicule immatriculé GE-214-KT doit passer au contrôle technique.",
     "Le véhicule immatriculé GE-241-KT doit passer au contrôle technique.")
b.ds("branch", "Lille-Centre", "Lille-Fives",
     "L'agence de Lille-Centre ouvre le samedi matin.",
     "L'agence de Lille-Fives est fermée le samedi.", changed=True)
b.ds("condominium lot", "n° 12", "n° 21",
     "Le lot n° 12 de la copropriété a une place de parking.",
     "Le lot n° 21 de la copropriété a une place de parking.")
b.ds("school class", "CM1 B", "CM1 A",
     "La classe de CM1 B part en classe verte en mai.",
     "La classe de CM1 A part en classe de neige en février.", changed=True)
b.ds("product reference", "VT-300-R", "VT-300-B",
     "La référence VT-300-R n'existe qu'en taille M.",
     "La référence VT-300-B n'existe qu'en taille M.")
b.ds("patient record", "P-7781", "P-7718",
     "Le dossier patient P-7781 mentionne une allergie à la pénicilline.",
     "Le dossier patient P-7718 ne mentionne aucune allergie.", changed=True)
b.ds("meeting room", "Vauban", "Colbert",
     "La salle Vauban n'a pas de vidéoprojecteur.",
     "La salle Colbert n'a pas de vidéoprojecteur.")
b.ds("user account", "mdurand", "mdurand2",
     "Le compte utilisateur mdurand a les droits d'administration.",
     "Le compte utilisateur mdurand2 est en lecture seule.", changed=True)
b.ds("department", "comptabilité", "logistique",
     "Sophie Bernard (comptabilité) est à temps partiel.",
     "Sophie Bernard (logistique) est à temps partiel.",
     comment="two people with the same name")
b.ds("phone number", "01 42 68 53 00", "01 42 68 35 00",
     "Le numéro 01 42 68 53 00 est celui de l'accueil du siège.",
     "Le numéro 01 42 68 35 00 est celui de l'accueil du siège.",
     comment="the head office may have two reception numbers")
b.ds("flight number", "AF 1234", "AF 1243",
     "Le vol AF 1234 du client part de Roissy.",
     "Le vol AF 1243 du client part d'Orly.", changed=True,
     comment="same traveller, two different flights")
b.ds("pet name", "Filou", "Caramel",
     "Le chien de Mme Petit, Filou, doit prendre son traitement le soir.",
     "Le chat de Mme Petit, Caramel, n'a pas de traitement.", changed=True)
b.ds("production batch", "L2403", "L2430",
     "Le lot de production L2403 a passé le contrôle qualité.",
     "Le lot de production L2430 a échoué au contrôle qualité.", changed=True)

# ---------------- complementary ----------------
b.co("Mathilde", "Mathilde parle couramment l'arabe.", "Mathilde parle couramment le japonais.",
     values=["l'arabe", "le japonais"])
b.co("Marc", "Marc aime le vin rouge.", "Marc aime le cidre.", values=["vin rouge", "cidre"])
b.co("les Lambert", "Les Lambert ont un lapin.", "Les Lambert ont un chien.",
     values=["lapin", "chien"])
b.co("data team", "L'équipe data utilise Airflow au quotidien.", "L'équipe data utilise dbt au quotidien.",
     values=["Airflow", "dbt"])
b.co("M. Haddad", "M. Haddad est déjà allé à Montréal.", "M. Haddad est déjà allé à Dakar.",
     values=["Montréal", "Dakar"])
b.co("health insurer", "La mutuelle rembourse l'ostéopathie.", "La mutuelle rembourse les lunettes.",
     values=["l'ostéopathie", "les lunettes"])
b.co("Nicolas", "Nicolas est titulaire du permis bateau.", "Nicolas est titulaire du permis moto.",
     values=["bateau", "moto"])
b.co("shop", "La boutique accepte les chèques-vacances.",
     "La boutique accepte les tickets-restaurant.",
     values=["chèques-vacances", "tickets-restaurant"])
b.co("Lina", "Lina fait de l'escalade depuis plusieurs années.", "Lina fait de la danse contemporaine depuis plusieurs années.",
     values=["l'escalade", "la danse contemporaine"])
b.co("customer", "Le client s'intéresse aux offres de fibre.",
     "Le client s'intéresse aux offres de téléphonie mobile.",
     values=["fibre", "téléphonie mobile"])
b.co("Mme Blanc", "Mme Blanc enseigne les mathématiques.", "Mme Blanc enseigne la physique.",
     values=["les mathématiques", "la physique"])
b.co("caterer", "Le traiteur livre à Versailles.", "Le traiteur livre à Saint-Denis.",
     values=["Versailles", "Saint-Denis"])
b.co("Gaëlle", "Gaëlle préfère être contactée par SMS.", "Gaëlle habite à Rennes.")
b.co("account 7302", "Le compte 7302 est en formule Pro.", "Le compte 7302 a été ouvert en 2018.")
b.co("M. Lemoine", "M. Lemoine a peur de l'avion.",
     "M. Lemoine voyage toujours en première classe dans le train.")
b.co("customer", "Le client est une association loi 1901.",
     "Le client demande ses factures en double exemplaire.")
b.co("Olivier", "Olivier est le référent sécurité de l'étage.",
     "Olivier est en télétravail le jeudi.")
b.co("user", "L'utilisatrice prépare un semi-marathon.",
     "L'utilisatrice est intolérante au lactose.")
b.co("ticket 6130", "Le ticket 6130 est pris en charge par Bastien.",
     "Le ticket 6130 ne concerne que le site de Brest.")
b.co("Élodie", "Élodie fête son anniversaire le 22 avril.", "Élodie n'aime pas les surprises.")
b.co("tenant 5B", "Le locataire du 5B a un bail depuis 2016.",
     "Le locataire du 5B a signalé une fuite sous l'évier.")
b.co("Fabien", "Fabien a deux enfants en bas âge.", "Fabien vient au bureau en covoiturage.")
b.co("Vignobles Rey", "Chez Vignobles Rey, l'interlocuteur achats est Paul Rey.",
     "Vignobles Rey exporte surtout vers la Belgique.")
b.co("user", "L'utilisateur développe en Python. Donner les exemples en Python.",
     "L'utilisateur chante dans une chorale le week-end.")
b.co("Mme Diallo", "Le titre de séjour de Mme Diallo expire en 2025.",
     "Mme Diallo souhaite des rendez-vous en fin de journée.")

ITEMS = b.items
