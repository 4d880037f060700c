"""The synthetic demo dataset: SEAHORSE-format ratings over templated news articles.

SYNTHETIC DATA, NOT SEAHORSE. Every article, summary and label here is generated from small
per-language lexicons and sentence templates, so that the demo and the tests run offline
in minutes. The files have exactly the real dataset's layout (`seahorse_data/{train,
validation,test}.tsv` with its header, gem_id forms, worker_lang values, systems and
Yes/No/Unsure labels, plus an articles file in the `{gem_id, article}` JSON Lines format
that `prepare` reads), but the numbers a model reaches on them say nothing about SEAHORSE.

Each summary's defects are drawn independently per question, with each system's share of
Yes from the paper's Table 3, and each defect is a clear, local signal, so that a tiny
mT5-shaped model can learn all six questions:

- Q1 No: a garbled summary (most words replaced by random letter strings);
- Q2 No: one word said eight to ten times in a row (a degenerate loop);
- Q3 No: the words of the summary's sentence in scrambled order, all in lower case, with
  two or three punctuation marks standing alone between them;
- Q4 No: every person and place in the summary is one the article does not mention
  (mostly invented names);
- Q5 No: a vague summary that names the place but not what happened there;
- Q6 No: the summary is padded with a side detail of the article and an empty remark
  (two to three times as long).

Then 5% of the labels are redrawn at random (label noise), a few become Unsure, and a Q1
label of No blanks Q2..Q6, as in the real files. Same seed, same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from collections.abc import Callable

from seahorse_t5x import constants, fileio

# Rows per split, like a small slice of SEAHORSE's 59/9/21 train/validation/test shares.
SPLIT_SIZES: dict[str, int] = {"train": 3000, "validation": 400, "test": 600}
LABEL_NOISE_RATE = 0.05  # share of labels redrawn uniformly from Yes/No
UNSURE_RATE = 0.015  # share of labels (after Q1) rated Unsure
Q1_UNSURE_RATE = 0.005
INVENTED_ENTITY_SHARE = 0.85  # of Q4 defects, how many use a never-seen entity
STRAY_PUNCTUATION = (",", ".")  # Q3: marks standing alone between words
CLOSING_SENTENCE_RATE = 0.25  # articles ending with a closing remark (kept short otherwise)
SUMMARIES_PER_ARTICLE = (2, 6)  # inclusive range; SEAHORSE has several systems per article

# Share of Yes per system and question, from the paper's Table 3 (Q1..Q6).
SYSTEM_YES_RATES: dict[str, tuple[float, ...]] = {
    "reference": (0.97, 0.97, 0.91, 0.54, 0.68, 0.43),
    "t5_base_250": (0.97, 0.79, 0.91, 0.41, 0.42, 0.25),
    "t5_base": (0.98, 0.92, 0.93, 0.59, 0.59, 0.43),
    "t5_xxl": (0.99, 0.97, 0.95, 0.65, 0.67, 0.51),
    "mt5_small_250": (0.71, 0.43, 0.59, 0.27, 0.19, 0.10),
    "mt5_small": (0.86, 0.57, 0.73, 0.36, 0.35, 0.19),
    "mt5_xxl": (0.96, 0.94, 0.88, 0.55, 0.65, 0.43),
    "palm_1shot": (0.88, 0.85, 0.79, 0.71, 0.57, 0.47),
    "palm_finetuned": (0.98, 0.98, 0.90, 0.69, 0.71, 0.56),
}

# (language, dataset) pairs with their annotation counts from the paper's Table 1: the demo
# draws articles in the same proportions.
LANGUAGE_DATASET_WEIGHTS: dict[tuple[str, str], int] = {
    ("de", "mlsum"): 7506,
    ("de", "wikilingua"): 7085,
    ("en", "xsum"): 6651,
    ("en", "xlsum"): 7884,
    ("en", "wikilingua"): 7804,
    ("es", "xlsum"): 4890,
    ("es", "mlsum"): 4857,
    ("es", "wikilingua"): 5002,
    ("ru", "xlsum"): 7254,
    ("ru", "wikilingua"): 7288,
    ("tr", "xlsum"): 10627,
    ("tr", "wikilingua"): 4791,
    ("vi", "xlsum"): 7522,
    ("vi", "wikilingua"): 7484,
}
WORKER_LANG: dict[str, str] = {v: k for k, v in constants.WORKER_LANG_TO_LANGUAGE.items()}


@dataclasses.dataclass(frozen=True)
class Lexicon:
    """One language's words and sentence templates.

    Slots: {person} {role} {org} {event} {city} {day} {num} {num2} in the main sentences;
    {person2} {city2} {job} {thing} {weather} {month} in the side sentences. Cities are
    stored in the form every template uses (e.g. Russian prepositional, Turkish locative).
    """

    names: tuple[str, ...]
    invented_names: tuple[str, ...]  # never appear in an article: Q4 hallucinations
    cities: tuple[str, ...]
    invented_cities: tuple[str, ...]
    orgs: tuple[str, ...]
    roles: tuple[str, ...]
    events: tuple[str, ...]
    days: tuple[str, ...]
    jobs: tuple[str, ...]
    things: tuple[str, ...]
    weathers: tuple[str, ...]
    months: tuple[str, ...]
    article_main: str
    article_number: str
    article_sides: tuple[str, ...]
    article_closings: tuple[str, ...]
    summary_mains: tuple[str, ...]  # the last one mentions {num}
    summary_vagues: tuple[str, ...]  # Q5 No: names the place, not what happened ({city})
    summary_fillers: tuple[str, ...]  # Q6 No: empty padding; never in an article
    alphabet: str  # letters of garbled (Q1) words


def _words(items: str) -> tuple[str, ...]:
    """A lexicon list written as one `|`-separated string (keeps the tables compact)."""
    return tuple(items.split("|"))


LEXICONS: dict[str, Lexicon] = {
    "en": Lexicon(
        names=_words(
            "James Carter|Emily Hughes|Oliver Grant|Sophie Turner|Daniel Reed|Laura Bennett|"
            "Thomas Wright|Grace Miller|Henry Walsh|Alice Morgan|Jack Fleming|Chloe Parker|"
            "Samuel Price|Megan Doyle|Lucas Hart|Ella Shaw"
        ),
        invented_names=_words("Zoran Quillby|Marta Vexley|Orrin Thackwell|Delphine Krusk"),
        cities=_words(
            "Leeds|Bristol|Glasgow|Cardiff|Belfast|York|Norwich|Dundee|Bath|Exeter|Hull|Derby|"
            "Oxford|Chester"
        ),
        invented_cities=_words("Wexmoor|Thornbridge Vale|Carrowdune"),
        orgs=_words(
            "the city council|the health ministry|the national rail company|the football club|"
            "the university|the energy regulator|the police|the teachers' union|"
            "the airport authority|the water company"
        ),
        roles=_words("head|spokesperson|director|chair|chief|deputy head"),
        events=_words(
            "opened a new hospital|announced a cut in bus fares|approved a plan for new homes|"
            "closed three libraries|launched a recycling scheme|"
            "signed a deal with local farmers|banned cars from the centre|"
            "raised the minimum wage|unveiled a new bridge|cancelled the summer festival"
        ),
        days=_words("on Monday|on Tuesday|on Wednesday|on Thursday|on Friday"),
        jobs=_words("teacher|farmer|nurse|driver|baker|student"),
        things=_words("castle|market|museum|harbour|cathedral|gardens"),
        weathers=_words("cold and wet|warm and sunny|windy|foggy|snowy"),
        months=_words("September|January|April"),
        article_main="{person}, the {role} of {org}, {event} in {city} {day}.",
        article_number="The plan will cost {num} million pounds and affect about {num2} people.",
        article_sides=(
            "The weather in {city2} was {weather} for most of the week.",
            "{person2}, a local {job}, said the area is famous for its {thing}.",
            "A small bakery in {city2} closed for repairs after a storm.",
            "{person2} won a chess tournament in {city2} last month.",
            "Traffic near {city2} was slow because of road works.",
            "Many visitors came to {city2} to see the old {thing}.",
            "{person2} opened a flower shop next to the station in {city2}.",
            "Schools in {city2} will start the new term in {month}.",
        ),
        article_closings=(
            "More details are expected next week.",
            "Further information will be published in the coming days.",
        ),
        summary_mains=(
            "{person} {event} in {city}.",
            "In {city}, {person} {event}.",
            "{person}, the {role} of {org}, {event} in {city}.",
            "{person} {event} in {city} at a cost of {num} million pounds.",
        ),
        summary_vagues=(
            "This is a short report about recent news from {city}.",
            "The text discusses what people talk about in {city}.",
            "The article describes some changes in {city}.",
        ),
        summary_fillers=(
            "All of this was reported in the article above.",
            "These details are also worth mentioning here.",
        ),
        alphabet="abcdefghijklmnopqrstuvwxyz",
    ),
    "de": Lexicon(
        names=_words(
            "Anna Becker|Lukas Schmidt|Julia Wagner|Felix Hoffmann|Lena Schulz|Jonas Fischer|"
            "Mia Weber|Paul Meyer|Laura Koch|Tim Richter|Sophie Klein|Max Wolf|Hannah Braun|"
            "Leon Zimmermann|Clara Krüger|David Hartmann"
        ),
        invented_names=_words(
            "Gundolf Quarzbeck|Irmtraud Zwiebling|Wendelin Oxmann|Brunhild Tackelsee"
        ),
        cities=_words(
            "Köln|Leipzig|Bremen|Dresden|Hannover|Nürnberg|Freiburg|Kiel|Mainz|Rostock|Bonn|"
            "Erfurt|Augsburg|Potsdam"
        ),
        invented_cities=_words("Quelldorf|Brandwiesen|Oberzell am Fluss"),
        orgs=_words(
            "der Stadtverwaltung|dem Gesundheitsministerium|dem Bahnunternehmen|"
            "dem Fußballverein|der Universität|der Energieaufsicht|der Polizei|"
            "der Lehrergewerkschaft|dem Flughafen|den Wasserwerken"
        ),
        roles=_words("Sprecher|Leiter|Direktor|Vorsitzender|Chef|Vizechef"),
        events=_words(
            "ein neues Krankenhaus eröffnet|günstigere Bustickets angekündigt|"
            "einen Plan für neue Wohnungen beschlossen|drei Bibliotheken geschlossen|"
            "ein Recyclingprogramm gestartet|einen Vertrag mit Landwirten unterzeichnet|"
            "Autos aus der Innenstadt verbannt|den Mindestlohn erhöht|"
            "eine neue Brücke vorgestellt|das Sommerfest abgesagt"
        ),
        days=_words("am Montag|am Dienstag|am Mittwoch|am Donnerstag|am Freitag"),
        jobs=_words("Lehrerin|Landwirt|Krankenpfleger|Busfahrer|Bäcker|Studentin"),
        things=_words("Schloss|Museum|Rathaus|Theater|Kloster|Stadion"),
        weathers=_words("kalt und nass|warm und sonnig|windig|neblig|verschneit"),
        months=_words("September|Januar|April"),
        article_main="{person}, {role} bei {org}, hat {day} in {city} {event}.",
        article_number="Der Plan kostet {num} Millionen Euro und betrifft rund {num2} Menschen.",
        article_sides=(
            "Das Wetter in {city2} war fast die ganze Woche {weather}.",
            "{person2}, {job} aus der Gegend, sagte, die Region sei für ihr {thing} bekannt.",
            "Eine kleine Bäckerei in {city2} wurde nach einem Sturm geschlossen.",
            "{person2} hat letzten Monat ein Schachturnier in {city2} gewonnen.",
            "Der Verkehr bei {city2} war wegen einer Baustelle langsam.",
            "Viele Besucher kamen nach {city2}, um das alte {thing} zu sehen.",
            "{person2} hat am Bahnhof in {city2} einen Blumenladen eröffnet.",
            "Die Schulen in {city2} beginnen das neue Schuljahr im {month}.",
        ),
        article_closings=(
            "Weitere Details sollen nächste Woche folgen.",
            "Mehr Informationen werden in den kommenden Tagen erwartet.",
        ),
        summary_mains=(
            "{person} hat in {city} {event}.",
            "In {city} hat {person} {event}.",
            "{person}, {role} bei {org}, hat in {city} {event}.",
            "{person} hat in {city} für {num} Millionen Euro {event}.",
        ),
        summary_vagues=(
            "Dies ist ein kurzer Bericht über Neuigkeiten aus {city}.",
            "Der Text handelt davon, worüber man in {city} spricht.",
            "Der Artikel beschreibt einige Veränderungen in {city}.",
        ),
        summary_fillers=(
            "All dies wurde in dem Artikel oben berichtet.",
            "Auch diese Einzelheiten sind hier erwähnenswert.",
        ),
        alphabet="abcdefghijklmnopqrstuvwxyzäöüß",
    ),
    "es": Lexicon(
        names=_words(
            "Carlos Ruiz|Lucía Martín|Javier Gómez|Marta Sánchez|Pablo Torres|Elena Navarro|"
            "Diego Romero|Laura Molina|Sergio Ortega|Ana Delgado|Miguel Castro|Sara Vidal|"
            "Raúl Herrera|Clara Ramos|Iván Morales|Paula Iglesias"
        ),
        invented_names=_words("Zoilo Quintarra|Brenda Valdórez|Teófilo Xamberra|Ofelia Trunzado"),
        cities=_words(
            "Sevilla|Valencia|Bilbao|Zaragoza|Málaga|Granada|Salamanca|Córdoba|Oviedo|Cádiz|"
            "Toledo|Murcia|Burgos|Alicante"
        ),
        invented_cities=_words("Villaquebra|Torrenublo|San Esteril"),
        orgs=_words(
            "la alcaldía|la consejería de salud|la compañía de trenes|la federación de fútbol|"
            "la universidad|la agencia de energía|la policía local|"
            "la asociación de profesores|la autoridad portuaria|la compañía de aguas"
        ),
        roles=_words("portavoz|director|presidente|responsable|jefe|gerente"),
        events=_words(
            "inauguró un nuevo hospital|anunció una rebaja del billete de autobús|"
            "aprobó un plan de nuevas viviendas|cerró tres bibliotecas|"
            "lanzó un programa de reciclaje|firmó un acuerdo con agricultores locales|"
            "prohibió los coches en el centro|subió el salario mínimo|"
            "presentó un nuevo puente|canceló el festival de verano"
        ),
        days=_words("el lunes|el martes|el miércoles|el jueves|el viernes"),
        jobs=_words("profesora|agricultor|enfermera|conductor|panadero|estudiante"),
        things=_words("castillo|mercado|museo|puerto|monasterio|jardín botánico"),
        weathers=_words("frío y lluvioso|cálido y soleado|ventoso|nublado|muy seco"),
        months=_words("septiembre|enero|abril"),
        article_main="{person}, {role} de {org}, {event} en {city} {day}.",
        article_number="El plan costará {num} millones de euros y afectará a unas {num2} personas.",
        article_sides=(
            "El tiempo en {city2} fue {weather} durante casi toda la semana.",
            "{person2}, {job} de la zona, dijo que la región es famosa por su {thing}.",
            "Una pequeña panadería de {city2} cerró por reparaciones tras una tormenta.",
            "{person2} ganó un torneo de ajedrez en {city2} el mes pasado.",
            "El tráfico cerca de {city2} fue lento por unas obras.",
            "Muchos visitantes llegaron a {city2} para ver el viejo {thing}.",
            "{person2} abrió una floristería junto a la estación de {city2}.",
            "Los colegios de {city2} empezarán el nuevo curso en {month}.",
        ),
        article_closings=(
            "Se esperan más detalles la próxima semana.",
            "La información completa se publicará en los próximos días.",
        ),
        summary_mains=(
            "{person} {event} en {city}.",
            "En {city}, {person} {event}.",
            "{person}, {role} de {org}, {event} en {city}.",
            "{person} {event} en {city}, con un coste de {num} millones de euros.",
        ),
        summary_vagues=(
            "Es un breve informe sobre las novedades de {city}.",
            "El texto trata de lo que se comenta en {city}.",
            "El artículo describe algunos cambios en {city}.",
        ),
        summary_fillers=(
            "Todo esto se contó en el artículo de arriba.",
            "También vale la pena mencionar aquí estos detalles.",
        ),
        alphabet="abcdefghijklmnopqrstuvwxyzñáéíóú",
    ),
    "ru": Lexicon(
        names=_words(
            "Иван Петров|Анна Смирнова|Дмитрий Козлов|Елена Морозова|Сергей Волков|"
            "Ольга Новикова|Алексей Соколов|Мария Лебедева|Павел Орлов|Наталья Егорова|"
            "Михаил Зайцев|Татьяна Павлова|Андрей Белов|Ирина Фёдорова|Николай Ковалёв|"
            "Светлана Гусева"
        ),
        invented_names=_words(
            "Ермолай Квасницкий|Зинаида Пряхтина|Фрол Дубоватский|Агриппина Штольц"
        ),
        cities=_words(
            "Казани|Самаре|Перми|Твери|Уфе|Омске|Туле|Калуге|Вологде|Рязани|Курске|Томске|"
            "Иркутске|Ярославле"
        ),
        invented_cities=_words("Кривозерске|Верхнепрудске|Заболотье"),
        orgs=_words(
            "городской администрации|министерства здравоохранения|железнодорожной компании|"
            "футбольного клуба|университета|энергетического регулятора|местной полиции|"
            "профсоюза учителей|аэропорта|водоканала"
        ),
        roles=_words("представитель|глава|директор|председатель|руководитель|пресс-секретарь"),
        events=_words(
            "открывает новую больницу|объявляет о снижении цен на автобус|"
            "утверждает план строительства жилья|закрывает три библиотеки|"
            "запускает программу переработки|подписывает соглашение с фермерами|"
            "запрещает машины в центре|повышает минимальную зарплату|представляет новый мост|"
            "отменяет летний фестиваль"
        ),
        days=_words("в понедельник|во вторник|в среду|в четверг|в пятницу"),
        jobs=_words("учитель|фермер|врач|водитель|пекарь|студент"),
        things=_words("замком|рынком|музеем|портом|собором|садом"),
        weathers=_words("холодной и дождливой|тёплой и солнечной|ветреной|туманной|снежной"),
        months=_words("сентябре|январе|апреле"),
        article_main="{person}, {role} {org}, {day} {event} в {city}.",
        article_number="План обойдётся в {num} миллионов рублей и затронет около {num2} человек.",
        article_sides=(
            "Погода в {city2} почти всю неделю была {weather}.",
            "{person2}, местный {job}, говорит, что регион славится своим {thing}.",
            "Небольшая пекарня в {city2} закрылась на ремонт после бури.",
            "{person2} побеждает на шахматном турнире в {city2}.",
            "Движение в {city2} было медленным из-за ремонта дороги.",
            "Многие туристы в {city2} посещают старый город.",
            "{person2} открывает цветочный магазин у вокзала в {city2}.",
            "Школы в {city2} начнут новый учебный год в {month}.",
        ),
        article_closings=(
            "Подробности ожидаются на следующей неделе.",
            "Больше информации появится в ближайшие дни.",
        ),
        summary_mains=(
            "{person} {event} в {city}.",
            "В {city} {person} {event}.",
            "{person}, {role} {org}, {event} в {city}.",
            "{person} {event} в {city} за {num} миллионов рублей.",
        ),
        summary_vagues=(
            "Это короткая заметка о новостях в {city}.",
            "Текст рассказывает о том, что обсуждают в {city}.",
            "Статья описывает некоторые перемены в {city}.",
        ),
        summary_fillers=(
            "Обо всём этом говорится в статье выше.",
            "Эти подробности тоже стоит здесь упомянуть.",
        ),
        alphabet="абвгдежзийклмнопрстуфхцчшщыьэюя",
    ),
    "tr": Lexicon(
        names=_words(
            "Ahmet Yılmaz|Ayşe Kaya|Mehmet Demir|Fatma Şahin|Mustafa Çelik|Zeynep Arslan|"
            "Emre Doğan|Elif Kılıç|Burak Aydın|Selin Öztürk|Murat Koç|Deniz Kurt|Can Özdemir|"
            "Ece Aslan|Kemal Polat|Büşra Güneş"
        ),
        invented_names=_words("Zübeyir Kocabıyık|Nebahat Şıkırdak|Tufan Yelkovan|Gülizar Pırıltı"),
        cities=_words(
            "İzmir'de|Bursa'da|Konya'da|Trabzon'da|Eskişehir'de|Kayseri'de|Samsun'da|"
            "Antalya'da|Mersin'de|Denizli'de|Malatya'da|Edirne'de|Sivas'ta|Van'da"
        ),
        invented_cities=_words("Kuzukaya'da|Yeşilçamur'da|Taşpınarlı'da"),
        orgs=_words(
            "belediye|sağlık bakanlığı|demiryolu şirketi|futbol kulübü|üniversite|"
            "enerji kurumu|emniyet|öğretmen sendikası|havalimanı|su idaresi"
        ),
        roles=_words("sözcüsü|başkanı|müdürü|yöneticisi|temsilcisi|yetkilisi"),
        events=_words(
            "yeni bir hastane açtı|otobüs ücretlerinde indirim açıkladı|"
            "yeni konutlar için bir planı onayladı|üç kütüphaneyi kapattı|"
            "bir geri dönüşüm programı başlattı|yerel çiftçilerle bir anlaşma imzaladı|"
            "arabaları şehir merkezinden yasakladı|asgari ücreti artırdı|"
            "yeni bir köprü tanıttı|yaz festivalini iptal etti"
        ),
        days=_words("pazartesi günü|salı günü|çarşamba günü|perşembe günü|cuma günü"),
        jobs=_words("öğretmen|çiftçi|hemşire|şoför|fırıncı|öğrenci"),
        things=_words("kalesi|çarşısı|müzesi|limanı|camisi|bahçeleri"),
        weathers=_words("soğuk ve yağmurlu|sıcak ve güneşli|rüzgarlı|sisli|karlı"),
        months=_words("eylülde|ocakta|nisanda"),
        article_main="{org} {role} {person}, {day} {city} {event}.",
        article_number="Planın maliyeti {num} milyon lira olacak ve yaklaşık {num2} kişiyi etkileyecek.",
        article_sides=(
            "{city2} hava hafta boyunca {weather} geçti.",
            "Yerel bir {job} olan {person2}, bölgenin {thing} ile ünlü olduğunu söyledi.",
            "{city2} küçük bir fırın fırtınadan sonra tamir için kapandı.",
            "{person2} geçen ay {city2} bir satranç turnuvası kazandı.",
            "{city2} yol çalışmaları nedeniyle trafik yavaştı.",
            "{city2} birçok ziyaretçi eski çarşıyı görmeye geldi.",
            "{person2}, {city2} istasyonun yanında bir çiçekçi açtı.",
            "{city2} okullar yeni döneme {month} başlayacak.",
        ),
        article_closings=(
            "Daha fazla ayrıntının gelecek hafta paylaşılması bekleniyor.",
            "Önümüzdeki günlerde yeni bilgiler açıklanacak.",
        ),
        summary_mains=(
            "{person} {city} {event}.",
            "{city} {person} {event}.",
            "{org} {role} {person}, {city} {event}.",
            "{person} {city} {num} milyon liraya {event}.",
        ),
        summary_vagues=(
            "Bu metin {city} yaşanan gelişmeleri kısaca anlatıyor.",
            "Yazı {city} konuşulan konulardan söz ediyor.",
            "Haber {city} olan bazı değişiklikleri anlatıyor.",
        ),
        summary_fillers=(
            "Bütün bunlar yukarıdaki makalede anlatıldı.",
            "Bu ayrıntılardan da burada söz etmek gerekir.",
        ),
        alphabet="abcçdefgğhıijklmnoöprsştuüvyz",
    ),
    "vi": Lexicon(
        names=_words(
            "Nguyễn Văn An|Trần Thị Bình|Lê Minh Châu|Phạm Quốc Dũng|Hoàng Thu Hà|Vũ Đức Huy|"
            "Đặng Ngọc Lan|Bùi Thanh Long|Đỗ Thị Mai|Ngô Văn Nam|Dương Thu Phương|"
            "Lý Quang Sơn|Hồ Thị Thảo|Mai Văn Tuấn|Trịnh Bảo Vy|Phan Minh Khoa"
        ),
        invented_names=_words("Khổng Văn Quýt|Lạc Thị Ửng|Giáp Xuân Khứu|Ông Thị Nhạn"),
        cities=_words(
            "Hà Nội|Đà Nẵng|Huế|Cần Thơ|Hải Phòng|Nha Trang|Vinh|Đà Lạt|Quy Nhơn|"
            "Buôn Ma Thuột|Hạ Long|Vũng Tàu|Thái Nguyên|Nam Định"
        ),
        invented_cities=_words("Làng Xuyến|Phố Gạo Ngầm|Bến Lạch Ngù"),
        orgs=_words(
            "ủy ban thành phố|bộ y tế|công ty đường sắt|câu lạc bộ bóng đá|trường đại học|"
            "cơ quan năng lượng|công an thành phố|công đoàn giáo viên|cảng hàng không|"
            "công ty cấp nước"
        ),
        roles=_words("người phát ngôn|giám đốc|chủ tịch|trưởng phòng|đại diện|lãnh đạo"),
        events=_words(
            "đã khai trương một bệnh viện mới|đã công bố giảm giá vé xe buýt|"
            "đã phê duyệt kế hoạch xây nhà mới|đã đóng cửa ba thư viện|"
            "đã khởi động chương trình tái chế|đã ký thỏa thuận với nông dân địa phương|"
            "đã cấm ô tô vào trung tâm|đã tăng lương tối thiểu|đã giới thiệu một cây cầu mới|"
            "đã hủy lễ hội mùa hè"
        ),
        days=_words("vào thứ Hai|vào thứ Ba|vào thứ Tư|vào thứ Năm|vào thứ Sáu"),
        jobs=_words("giáo viên|nông dân|y tá|tài xế|thợ làm bánh|sinh viên"),
        things=_words("tòa thành cổ|chợ nổi|bảo tàng|bến cảng|ngôi chùa|vườn hoa"),
        weathers=_words("lạnh và mưa|ấm và nắng|nhiều gió|có sương mù|rất khô"),
        months=_words("tháng Chín|tháng Một|tháng Tư"),
        article_main="{person}, {role} {org}, {event} tại {city} {day}.",
        article_number="Kế hoạch sẽ tốn {num} tỷ đồng và ảnh hưởng đến khoảng {num2} người.",
        article_sides=(
            "Thời tiết ở {city2} {weather} gần như cả tuần.",
            "{person2}, một {job} địa phương, nói rằng vùng này nổi tiếng với {thing}.",
            "Một tiệm bánh nhỏ ở {city2} đã đóng cửa để sửa chữa sau cơn bão.",
            "{person2} đã thắng một giải cờ vua ở {city2} tháng trước.",
            "Giao thông gần {city2} chậm vì công trình sửa đường.",
            "Nhiều du khách đến {city2} để xem {thing}.",
            "{person2} đã mở một cửa hàng hoa cạnh nhà ga ở {city2}.",
            "Các trường học ở {city2} sẽ bắt đầu năm học mới vào {month}.",
        ),
        article_closings=(
            "Thông tin chi tiết sẽ được công bố vào tuần tới.",
            "Dự kiến sẽ có thêm thông tin trong những ngày tới.",
        ),
        summary_mains=(
            "{person} {event} tại {city}.",
            "Tại {city}, {person} {event}.",
            "{person}, {role} {org}, {event} tại {city}.",
            "{person} {event} tại {city} với chi phí {num} tỷ đồng.",
        ),
        summary_vagues=(
            "Đây là một bản tin ngắn về những chuyện mới ở {city}.",
            "Văn bản kể về những điều người ta bàn tán ở {city}.",
            "Bài báo mô tả một số thay đổi ở {city}.",
        ),
        summary_fillers=(
            "Tất cả điều này đã được nêu trong bài báo ở trên.",
            "Những chi tiết này cũng đáng được nhắc đến ở đây.",
        ),
        alphabet="abcdeghiklmnopqrstuvxyăâđêôơưàáảãạ",
    ),
}

_ENTITY_SLOTS = ("person", "city")  # the entity slots of the summary templates


@dataclasses.dataclass(frozen=True)
class _Sentence:
    template: str
    slots: dict[str, str]

    def render(self, **overrides: str) -> str:
        text = self.template.format(**{**self.slots, **overrides})
        return text[0].upper() + text[1:]


@dataclasses.dataclass(frozen=True)
class _Article:
    gem_id: str
    language: str
    main_slots: dict[str, str]
    sentences: tuple[_Sentence, ...]  # main, number, side details..., closing
    sides: tuple[_Sentence, ...]
    entities: frozenset[str]  # every name, city and number the article mentions

    @property
    def text(self) -> str:
        return " ".join(s.render() for s in self.sentences)


@dataclasses.dataclass(frozen=True)
class DemoDataset:
    """The generated dataset in memory.

    Attributes:
      rows: split -> TSV rows, each a dict keyed by `constants.TSV_COLUMNS`.
      articles: gem_id -> article text, in generation order.
    """

    rows: dict[str, list[dict[str, str]]]
    articles: dict[str, str]


def _gem_id(language: str, dataset: str, source_split: str, number: int) -> str:
    """The gem_id form SEAHORSE uses for each source dataset (see docs/data.md)."""
    name = constants.LANGUAGE_NAMES[language]
    if dataset == "xlsum":
        return f"xlsum_{name}-{source_split}-{number}"
    if dataset == "mlsum":
        return f"mlsum_{language}-{source_split}-{number}"
    if dataset == "xsum":
        return f"xsum-{source_split}-{number}"
    # GEM v1 WikiLingua ids spell the validation split `val`.
    short_split = "val" if source_split == "validation" else source_split
    return f"wiki_lingua_{name}_{language}-{short_split}-{number}"


def _make_article(rng: random.Random, language: str, gem_id: str) -> _Article:
    lex = LEXICONS[language]
    person, *side_people = rng.sample(lex.names, 7)
    city, *side_cities = rng.sample(lex.cities, 7)
    num = str(rng.randrange(2, 100))
    main_slots = {
        "person": person,
        "role": rng.choice(lex.roles),
        "org": rng.choice(lex.orgs),
        "event": rng.choice(lex.events),
        "city": city,
        "day": rng.choice(lex.days),
        "num": num,
        "num2": str(rng.randrange(200, 9000, 50)),
    }
    side_templates = rng.sample(lex.article_sides, rng.randint(2, 4))
    sides = tuple(
        _Sentence(
            template,
            {
                "person2": side_people[i],
                "city2": side_cities[i],
                "job": rng.choice(lex.jobs),
                "thing": rng.choice(lex.things),
                "weather": rng.choice(lex.weathers),
                "month": rng.choice(lex.months),
            },
        )
        for i, template in enumerate(side_templates)
    )
    sentences = (
        _Sentence(lex.article_main, main_slots),
        _Sentence(lex.article_number, main_slots),
        *sides,
    )
    if rng.random() < CLOSING_SENTENCE_RATE:
        sentences += (_Sentence(rng.choice(lex.article_closings), {}),)
    entities = {person, city, num, main_slots["num2"]}
    for side in sides:
        for slot in ("person2", "city2"):
            if "{" + slot + "}" in side.template:
                entities.add(side.slots[slot])
    return _Article(gem_id, language, main_slots, sentences, sides, frozenset(entities))


def _invented_entity(rng: random.Random, article: _Article, slot: str) -> str:
    """An entity of the slot's kind that the article does not mention (Q4 defect)."""
    lex = LEXICONS[article.language]
    invented, regular = (
        (lex.invented_names, lex.names)
        if slot.startswith("person")
        else (lex.invented_cities, lex.cities)
    )
    # Mostly names no article uses (learnable from the summary alone); the rest are real
    # names from other articles, which only a comparison with the article catches.
    choices = invented if rng.random() < INVENTED_ENTITY_SHARE else regular
    return rng.choice([c for c in choices if c not in article.entities])


def _garble(rng: random.Random, text: str, alphabet: str) -> str:
    """Q1 defect: most words become random letter strings; no punctuation survives."""
    words = []
    for word in text.split():
        if rng.random() < 0.8:
            length = max(2, len(word) + rng.randint(-1, 2))
            words.append("".join(rng.choice(alphabet) for _ in range(length)))
        else:
            words.append(word.strip(".,"))
    return " ".join(words)


def _make_summary(rng: random.Random, article: _Article, defects: dict[int, bool]) -> str:
    """Renders one summary of `article` with the given defects (True = the question's No)."""
    lex = LEXICONS[article.language]
    if defects[5]:  # vague: names the place, not what happened
        base = _Sentence(rng.choice(lex.summary_vagues), article.main_slots)
    else:
        base = _Sentence(rng.choice(lex.summary_mains), article.main_slots)
    overrides = {}
    if defects[4]:  # every person and place in the summary is one the article lacks
        for slot in _ENTITY_SLOTS:
            if "{" + slot + "}" in base.template:
                overrides[slot] = _invented_entity(rng, article, slot)
    words = base.render(**overrides).split()
    if defects[3]:  # scrambled word order, all in lower case, stray punctuation marks
        original = list(words)
        while words == original:
            rng.shuffle(words)
        words = [w.lower() for w in words]
        for _ in range(rng.randint(2, 3)):
            words.insert(rng.randrange(1, len(words) + 1), rng.choice(STRAY_PUNCTUATION))
    if defects[2]:  # one word said eight to ten times in a row (a degenerate loop)
        start = rng.randrange(len(words))
        words[start + 1 : start + 1] = [words[start]] * rng.randint(7, 9)
    text = " ".join(words)
    if not defects[3]:
        text = text[0].upper() + text[1:]
    if defects[6]:  # padded with a side detail and an empty remark: two to three times as long
        text = f"{text} {rng.choice(article.sides).render()} {rng.choice(lex.summary_fillers)}"
    if defects[1]:
        text = _garble(rng, text, lex.alphabet)
    return text


def _draw_labels(rng: random.Random, system: str) -> tuple[dict[int, bool], list[str]]:
    """Draws latent defects per question and the (noisy) labels raters gave.

    Returns:
      defects: question -> True when the summary is built with that question's defect.
      labels: question1..question6 values as written in the TSV.
    """
    yes_rates = SYSTEM_YES_RATES[system]
    defects = {q: rng.random() >= yes_rates[q - 1] for q in constants.QUESTIONS}
    labels = []
    for q in constants.QUESTIONS:
        label = constants.LABEL_NO if defects[q] else constants.LABEL_YES
        if rng.random() < LABEL_NOISE_RATE:
            label = rng.choice((constants.LABEL_YES, constants.LABEL_NO))
        if rng.random() < (Q1_UNSURE_RATE if q == 1 else UNSURE_RATE):
            label = constants.LABEL_UNSURE
        labels.append(label)
    if labels[0] == constants.LABEL_NO:  # as in SEAHORSE: Q1 No leaves Q2..Q6 empty
        labels[1:] = [""] * 5
    return defects, labels


def generate(seed: int = 0, split_sizes: dict[str, int] | None = None) -> DemoDataset:
    """Generates the demo dataset in memory (deterministic for `seed`).

    Args:
      seed: random seed; the same seed gives the same dataset.
      split_sizes: rows per split (default `SPLIT_SIZES`).
    """
    sizes = dict(SPLIT_SIZES if split_sizes is None else split_sizes)
    rng = random.Random(seed)
    pairs = list(LANGUAGE_DATASET_WEIGHTS)
    weights = [LANGUAGE_DATASET_WEIGHTS[p] for p in pairs]
    # SEAHORSE train and validation summaries both come from the sources' validation
    # splits, so their articles share one id space; ids increase with random gaps.
    next_number: dict[tuple[str, str, str], int] = {}
    rows: dict[str, list[dict[str, str]]] = {}
    articles: dict[str, str] = {}
    for split in constants.SPLITS:
        source_split = "test" if split == "test" else "validation"
        split_rows: list[dict[str, str]] = []
        while len(split_rows) < sizes.get(split, 0):
            language, dataset = rng.choices(pairs, weights)[0]
            key = (language, dataset, source_split)
            number = next_number.get(key, rng.randrange(0, 50)) + rng.randint(1, 30)
            next_number[key] = number
            gem_id = _gem_id(language, dataset, source_split, number)
            article = _make_article(rng, language, gem_id)
            articles[gem_id] = article.text
            wanted = min(rng.randint(*SUMMARIES_PER_ARTICLE), sizes[split] - len(split_rows))
            seen: set[str] = set()
            for system in rng.sample(constants.SYSTEMS, wanted):
                defects, labels = _draw_labels(rng, system)
                # Two systems may render the same summary; SEAHORSE has no duplicate
                # (gem_id, summary) pairs, so redraw the wording (rarely, give up).
                for _ in range(20):
                    summary = _make_summary(rng, article, defects)
                    if summary not in seen:
                        break
                else:
                    continue
                seen.add(summary)
                split_rows.append(
                    dict(
                        zip(
                            constants.TSV_COLUMNS,
                            (gem_id, WORKER_LANG[language], summary, system, *labels),
                            strict=True,
                        )
                    )
                )
        rows[split] = split_rows
    return DemoDataset(rows=rows, articles=articles)


def write_demo_dataset(
    output_dir: str, seed: int = 0, split_sizes: dict[str, int] | None = None
) -> dict:
    """Writes the demo dataset in the real SEAHORSE layout.

    Writes `output_dir/seahorse_data/{train,validation,test}.tsv` (header row, tab
    separated, no quoting) and `output_dir/articles.jsonl` (`{"gem_id", "article"}`).

    Args:
      output_dir: directory to write into (created if missing; checked first).
      seed: random seed; the same seed gives byte-identical files.
      split_sizes: rows per split (default `SPLIT_SIZES`; smaller for quick tests).

    Returns:
      {"seahorse_dir": ..., "articles": ..., "rows": {split: count}, "num_articles": n}.
    """
    fileio.check_output_path(output_dir, "directory", flag="--output_dir")
    data = generate(seed, split_sizes)
    seahorse_dir = os.path.join(output_dir, "seahorse_data")
    for split, split_rows in data.rows.items():
        with fileio.atomic_writer(os.path.join(seahorse_dir, f"{split}.tsv")) as f:
            f.write("\t".join(constants.TSV_COLUMNS) + "\n")
            for row in split_rows:
                f.write("\t".join(row[c] for c in constants.TSV_COLUMNS) + "\n")
    articles_path = os.path.join(output_dir, "articles.jsonl")
    with fileio.atomic_writer(articles_path) as f:
        for gem_id, text in data.articles.items():
            f.write(json.dumps({"gem_id": gem_id, "article": text}, ensure_ascii=False) + "\n")
    return {
        "seahorse_dir": seahorse_dir,
        "articles": articles_path,
        "rows": {split: len(r) for split, r in data.rows.items()},
        "num_articles": len(data.articles),
    }


def prepare_demo(
    output_dir: str,
    seed: int = 0,
    log: Callable[[str], None] | None = print,
    split_sizes: dict[str, int] | None = None,
) -> str:
    """Writes the demo dataset into `output_dir` and prepares it into `output_dir/prepared`.

    Args:
      output_dir: folder for `seahorse_data/`, `articles.jsonl` and `prepared/`.
      seed: data seed.
      log: receives progress lines (None: silent).
      split_sizes: rows per split (default `SPLIT_SIZES`; smaller for quick tests).

    Returns:
      The prepared folder, holding `{train,validation,test}.jsonl` (for SEAHORSE_DATA_DIR).
    """
    from seahorse_t5x import prepare  # prepare does not depend on the demo

    written = write_demo_dataset(output_dir, seed=seed, split_sizes=split_sizes)
    if log:
        rows = ", ".join(f"{split} {n}" for split, n in written["rows"].items())
        log(
            f"wrote synthetic demo data ({rows} rows, {written['num_articles']} articles) "
            f"to {written['seahorse_dir']} and {written['articles']}"
        )
    prepared = os.path.join(output_dir, "prepared")
    prepare.prepare(written["seahorse_dir"], [written["articles"]], prepared, log=log)
    return prepared
