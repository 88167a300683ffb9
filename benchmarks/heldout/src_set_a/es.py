from _common import Builder

b = Builder("es")

# ---------------- same_fact ----------------
b.sf("punctuation",
     "El cliente quiere la factura en formato PDF.",
     "El cliente quiere la factura en formato PDF",
     "el cliente quiere la factura en formato pdf.")
b.sf("punctuation",
     "¡Ojo! La señora Ibáñez no acepta llamadas antes de las 10:00.",
     "Ojo: la señora Ibáñez no acepta llamadas antes de las 10:00.")
b.sf("punctuation",
     "¿Idioma preferido de Julián? Catalán.",
     "Idioma preferido de Julián: catalán.")
b.sf("punctuation",
     "Cuenta 5820: pago domiciliado, sin excepciones.",
     "Cuenta 5820 – pago domiciliado, sin excepciones")
b.sf("punctuation",
     "Marta odia las reuniones de más de 30 minutos.",
     "¡Marta odia las reuniones de más de 30 minutos!",
     "Marta odia las reuniones de más de 30 minutos...")
b.sf("adverb",
     "Don Ernesto prefiere que le hablen de usted.",
     "Don Ernesto siempre prefiere que le hablen de usted.")
b.sf("adverb",
     "La usuaria es intolerante al gluten.",
     "La usuaria es realmente intolerante al gluten.",
     "La usuaria es definitivamente intolerante al gluten.")
b.sf("adverb",
     "El equipo de soporte usa Zendesk.",
     "El equipo de soporte todavía usa Zendesk.")
b.sf("adverb",
     "El pedido 40219 se envió con SEUR.",
     "El pedido 40219 efectivamente se envió con SEUR.")
b.sf("adverb",
     "Rocío necesita habitación en planta baja por su rodilla.",
     "Rocío necesita sí o sí habitación en planta baja por su rodilla.")
b.sf("filler",
     "Nota: el cliente tiene contrato anual.",
     "El cliente tiene contrato anual.")
b.sf("filler",
     "Recordatorio: Pablo sale de vacaciones el 1 de agosto.",
     "Pablo sale de vacaciones el 1 de agosto.",
     "Por cierto, Pablo sale de vacaciones el 1 de agosto.")
b.sf("filler",
     "Por favor, tener en cuenta que la tienda de Sevilla cierra a las 21:00.",
     "La tienda de Sevilla cierra a las 21:00.")
b.sf("filler",
     "La usuaria trabaja en el turno de noche.",
     "Usuaria trabaja en turno de noche.")
b.sf("filler",
     "Importante: el ticket 3317 es por un cobro duplicado.",
     "El ticket 3317 es por un cobro duplicado.")
b.sf("word_order",
     "Los viernes, Inés trabaja desde casa.",
     "Inés trabaja desde casa los viernes.",
     "Inés, los viernes, trabaja desde casa.")
b.sf("word_order",
     "Para cualquier reembolso hace falta la aprobación de Laura.",
     "Hace falta la aprobación de Laura para cualquier reembolso.")
b.sf("word_order",
     "Gonzalo toma el café sin azúcar.",
     "El café, Gonzalo lo toma sin azúcar.")
b.sf("synonym",
     "El cliente quiere dar de baja su suscripción.",
     "El cliente quiere cancelar su suscripción.",
     "El cliente quiere anular su suscripción.")
b.sf("synonym",
     "Alejandro conduce un coche eléctrico.",
     "Alejandro maneja un auto eléctrico.",
     "Alejandro conduce un auto eléctrico.",
     comment="Spain vs Latin American vocabulary")
b.sf("synonym",
     "El proveedor Textiles Ruiz entrega los martes.",
     "El proveedor Textiles Ruiz reparte los martes.")
b.sf("synonym",
     "Carmen está de baja por maternidad hasta junio.",
     "Carmen tiene permiso de maternidad hasta junio.")
b.sf("paraphrase",
     "El usuario no come carne ni pescado.",
     "El usuario es vegetariano.",
     comment="vegetariano may be read as allowing fish by some speakers")
b.sf("paraphrase",
     "La cuenta 9031 paga a 60 días.",
     "Las facturas de la cuenta 9031 vencen a los 60 días de su emisión.",
     "Plazo de pago de la cuenta 9031: 60 días.")
b.sf("paraphrase",
     "Sergio es el jefe del equipo de datos.",
     "El equipo de datos depende de Sergio, que es su jefe.")

# ---------------- value_change ----------------
b.vc("word", "report frequency", "cada semana", "cada mes",
     "Enviar a la señora Prieto el informe de ventas cada semana.",
     "Enviar a la señora Prieto el informe de ventas cada mes.")
b.vc("word", "contact channel", "WhatsApp", "correo",
     "Al cliente 2214 se le contacta por WhatsApp.",
     "Al cliente 2214 se le contacta por correo.")
b.vc("word", "tone", "cercano", "formal",
     "Con Valeria, usar un tono cercano.",
     "Con Valeria, usar un tono formal.")
b.vc("word", "file format", "Excel", "PDF",
     "Recursos Humanos quiere las nóminas en Excel.",
     "Recursos Humanos quiere las nóminas en PDF.")
b.vc("word", "answer language", "español", "catalán",
     "Responder a Joan en español.",
     "Responder a Joan en catalán.")
b.vc("word", "meeting time of day", "por la tarde", "por la mañana",
     "Tomás prefiere las reuniones por la tarde.",
     "Tomás prefiere las reuniones por la mañana.")
b.vc("word", "portal theme", "claro", "oscuro",
     "El usuario usa el tema claro en el portal.",
     "El usuario usa el tema oscuro en el portal.")
b.vc("word", "commute mode", "metro", "bicicleta",
     "Beatriz va a la oficina en metro.",
     "Beatriz va a la oficina en bicicleta.")
b.vc("word", "shipping method", "estándar", "urgentes",
     "La cuenta 7710 recibe los pedidos con envío estándar.",
     "Para la cuenta 7710, todos los envíos deben ir urgentes.", reworded=True)
b.vc("word", "incident status", "abierta", "cerrada",
     "La incidencia 6610 está abierta.",
     "La incidencia 6610 está cerrada.")
b.vc("word", "summary length", "largos", "cortos",
     "A Natalia le gustan los resúmenes largos y detallados.",
     "Natalia pide resúmenes cortos.", reworded=True)
b.vc("word", "subscription plan", "Básico", "Profesional",
     "El plan del cliente es Básico.",
     "El cliente se pasó al plan Profesional.", reworded=True)
b.vc("name", "city of residence", "Valencia", "Zaragoza",
     "Mateo vive en Valencia y va a la oficina dos días por semana.",
     "Mateo vive en Zaragoza y va a la oficina dos días por semana.")
b.vc("name", "manager", "Marta Gil", "Elena Soto",
     "La responsable de Lucía es Marta Gil.",
     "La responsable de Lucía es Elena Soto.")
b.vc("name", "scheduling tool", "Hootsuite", "Buffer",
     "El equipo de marketing programa las publicaciones con Hootsuite.",
     "El equipo de marketing programa las publicaciones con Buffer.")
b.vc("name", "airline", "Iberia", "Air Europa",
     "Aerolínea preferida del señor Domínguez: Iberia.",
     "El señor Domínguez prefiere volar con Air Europa.", reworded=True)
b.vc("name", "account manager", "Andrés Molina", "Clara Benítez",
     "El gestor de la cuenta de Frutas Levante es Andrés Molina.",
     "El gestor de la cuenta de Frutas Levante es Clara Benítez.",
     comment="gestor/gestora not adjusted to the new name")
b.vc("number", "dinner budget", "2.000 €", "2.800 €",
     "El presupuesto para la cena de empresa es de 2.000 €.",
     "El presupuesto para la cena de empresa es de 2.800 €.")
b.vc("number", "user limit", "25", "40",
     "El límite de usuarios del plan de Ferretería Gómez es 25.",
     "El límite de usuarios del plan de Ferretería Gómez es 40.")
b.vc("number", "class start time", "18:00", "19:30",
     "La clase de inglés de Irene empieza a las 18:00.",
     "La clase de inglés de Irene empieza a las 19:30.")
b.vc("number", "child's age", "4", "5",
     "El hijo de Raúl tiene 4 años.",
     "El hijo de Raúl ya cumplió 5 años.", reworded=True)
b.vc("negation", "monthly newsletter", "quiere", "no quiere",
     "El cliente quiere recibir el boletín mensual.",
     "El cliente no quiere recibir el boletín mensual.")
b.vc("negation", "time-clock app", "usa", "no usa",
     "Daniela usa la app de fichaje.",
     "Daniela no usa la app de fichaje.")
b.vc("negation", "payment reminders", "quiere que le recuerden", "ya no quiere recordatorios",
     "Íñigo quiere que le recuerden cada pago.",
     "Íñigo ya no quiere recordatorios de pago.", reworded=True)
b.vc("negation", "smoking", "fuma", "dejó de fumar",
     "Julia fuma; en los viajes pide habitación de fumadores.",
     "Julia dejó de fumar.", reworded=True)

# ---------------- different_subject ----------------
b.ds("account number", "3308", "3380",
     "La cuenta 3308 tiene descuento por volumen.",
     "La cuenta 3380 tiene descuento por volumen.")
b.ds("order number", "PED-10452", "PED-10425",
     "El pedido PED-10452 llegó dañado.",
     "El pedido PED-10425 llegó en perfecto estado.", changed=True)
b.ds("ticket id", "8812", "8821",
     "El ticket 8812 trata de un error al exportar a CSV.",
     "El ticket 8821 trata de un error al exportar a CSV.")
b.ds("invoice id", "F-2024-0318", "F-2024-0381",
     "La factura F-2024-0318 está pagada.",
     "La factura F-2024-0381 está pagada.")
b.ds("person name", "Lucía Fernández", "Lucía Hernández",
     "Lucía Fernández prefiere reuniones presenciales.",
     "Lucía Hernández prefiere reuniones presenciales.")
b.ds("person name", "José Manuel", "José Miguel",
     "José Manuel vive en Bilbao.",
     "José Miguel vive en Granada.", changed=True)
b.ds("company name", "Construcciones Arroyo", "Construcciones Arrieta",
     "Construcciones Arroyo paga por transferencia.",
     "Construcciones Arrieta paga por transferencia.")
b.ds("email address", "m.garcia@tallerescosta.es", "m.garcia@tallerescosta.com",
     "m.garcia@tallerescosta.es recibe los albaranes.",
     "m.garcia@tallerescosta.com recibe las facturas.", changed=True)
b.ds("url", "tiendaverde.es", "tiendaverde.mx",
     "La tienda online tiendaverde.es usa Shopify.",
     "La tienda online tiendaverde.mx usa Shopify.")
b.ds("flight date", "3 de mayo", "5 de mayo",
     "El vuelo del 3 de mayo sale de Barajas T4.",
     "El vuelo del 5 de mayo sale de Barajas T1.", changed=True)
b.ds("meeting date", "10/11", "11/10",
     "La reunión con el notario del 10/11 está confirmada.",
     "La reunión con el notario del 11/10 está confirmada.")
b.ds("employee number", "20457", "20475",
     "El empleado 20457 tiene 22 días de vacaciones.",
     "El empleado 20475 tiene 15 días de vacaciones.", changed=True)
b.ds("national id", "48291734K", "48291743K",
     "El alumno con DNI 48291734K está matriculado en el curso de Excel.",
     "El alumno con DNI 48291743K está matriculado en el curso de Excel.")
b.ds("branch", "Coyoacán", "Polanco",
     "La sucursal de Coyoacán abre los domingos.",
     "La sucursal de Polanco no abre los domingos.", changed=True)
b.ds("contract number", "CT-7765", "CT-7756",
     "El contrato CT-7765 se renueva automáticamente.",
     "El contrato CT-7756 se renueva automáticamente.")
b.ds("project name", "Faro", "Farola",
     "El proyecto Faro lo lleva Ana Ruiz.",
     "El proyecto Farola lo lleva Diego Paz.", changed=True)
b.ds("sku", "ZAP-39-NEG", "ZAP-40-NEG",
     "El artículo ZAP-39-NEG está agotado.",
     "El artículo ZAP-40-NEG está agotado.")
b.ds("booking reference", "HX4K9", "HX4K6",
     "La reserva HX4K9 incluye desayuno.",
     "La reserva HX4K6 no incluye desayuno.", changed=True)
b.ds("meeting room", "Picasso", "Miró",
     "La sala Picasso tiene pantalla táctil.",
     "La sala Miró tiene pantalla táctil.")
b.ds("username", "jlopez", "jlopezm",
     "El usuario jlopez tiene permisos de administrador.",
     "El usuario jlopezm solo tiene permisos de lectura.", changed=True)
b.ds("department", "ventas", "almacén",
     "Carlos Romero (ventas) trabaja en remoto.",
     "Carlos Romero (almacén) trabaja en remoto.",
     comment="two people with the same name")
b.ds("street address", "Alcalá 112", "Alcalá 121",
     "El piso de la calle Alcalá 112 se alquila amueblado.",
     "El piso de la calle Alcalá 121 se alquila amueblado.")
b.ds("child's name", "Sofía", "Bruno",
     "Sofía, la hija de Ramón, es alérgica a los frutos secos.",
     "Bruno, el hijo de Ramón, es alérgico al marisco.", changed=True)
b.ds("medical record number", "HC-55102", "HC-55120",
     "El paciente con historia clínica HC-55102 tiene cita en traumatología.",
     "El paciente con historia clínica HC-55120 tiene cita en cardiología.", changed=True)
b.ds("member number", "0099", "0909",
     "El socio n.º 0099 del gimnasio paga cuota mensual.",
     "El socio n.º 0909 del gimnasio paga cuota anual.", changed=True)

# ---------------- complementary ----------------
b.co("Ana", "Ana habla portugués con fluidez y puede atender llamadas de soporte.", "Ana habla italiano con fluidez y puede atender llamadas de soporte.", values=["portugués", "italiano"])
b.co("user", "Al usuario le gusta el té rojo.", "Al usuario le gusta el mate.",
     values=["té rojo", "mate"])
b.co("los Ortega", "Los Ortega tienen un perro.", "Los Ortega tienen un loro.",
     values=["perro", "loro"])
b.co("backend team", "El equipo de backend trabaja con Go.",
     "El equipo de backend trabaja con Kotlin.", values=["Go", "Kotlin"])
b.co("Germán", "Germán ha estado en Tokio.", "Germán ha estado en Buenos Aires.",
     values=["Tokio", "Buenos Aires"])
b.co("clinic", "La clínica acepta seguros de Sanitas.", "La clínica acepta seguros de Adeslas.",
     values=["Sanitas", "Adeslas"])
b.co("Vanesa", "Vanesa tiene la certificación PMP.", "Vanesa tiene la certificación Scrum Master.",
     values=["PMP", "Scrum Master"])
b.co("restaurant", "El restaurante tiene opciones veganas.",
     "El restaurante tiene opciones sin gluten.", values=["veganas", "sin gluten"])
b.co("Ignacio", "Ignacio juega al pádel en un club de su barrio.", "Ignacio juega al ajedrez en un club de su barrio.",
     values=["pádel", "ajedrez"])
b.co("user", "La usuaria colecciona vinilos.", "La usuaria colecciona sellos.",
     values=["vinilos", "sellos"])
b.co("Rafael", "Rafael da clases en el máster de finanzas.",
     "Rafael da clases en el máster de marketing.", values=["finanzas", "marketing"])
b.co("company", "La empresa tiene oficinas en Monterrey.",
     "La empresa tiene oficinas en Lima.", values=["Monterrey", "Lima"])
b.co("Esteban", "Esteban prefiere que le escriban por correo electrónico.", "Esteban vive en Salamanca.")
b.co("account 6642", "La cuenta 6642 está en el plan Empresa.",
     "La cuenta 6642 tiene cinco usuarios activos.")
b.co("señora Castillo", "La señora Castillo tiene miedo a volar.",
     "La señora Castillo es socia de la bodega desde 2015.")
b.co("customer", "El año fiscal del cliente empieza en octubre.",
     "El cliente exige número de pedido en todas las facturas.")
b.co("Nuria", "Nuria coordina el equipo de calidad.",
     "Nuria no trabaja los miércoles por la tarde.")
b.co("user", "El usuario entrena para un triatlón.", "El usuario no toma lácteos.")
b.co("incident 5120", "La incidencia 5120 está asignada a Jorge.",
     "La incidencia 5120 afecta solo a la sede de Málaga.")
b.co("Pilar", "El cumpleaños de Pilar es el 8 de febrero.",
     "Pilar prefiere los restaurantes japoneses.")
b.co("academy website", "La web de la academia está hecha con WordPress.",
     "La web de la academia recibe unas 2.000 visitas al día.")
b.co("Héctor", "Héctor tiene tres hijos y pide las vacaciones en julio.", "Héctor es donante de sangre.")
b.co("Grupo Olmedo", "La persona de contacto de compras en Grupo Olmedo es Teresa Vidal.",
     "Grupo Olmedo tiene su sede en Murcia.")
b.co("user", "El usuario programa en PHP. Quiere los ejemplos en PHP.",
     "El usuario toca la batería en un grupo de rock.")
b.co("Rodrigo", "El pasaporte de Rodrigo caduca en 2027.",
     "Rodrigo pide las facturas a nombre de la filial de Quito.")

ITEMS = b.items
