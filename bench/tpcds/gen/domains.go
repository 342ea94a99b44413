package gen

// Value domains. The lists follow the TPC-DS specification's distributions
// where the queries filter on them; the rest are plausible fillers.

// categories in category-id order (i_category_id = index+1), each with its
// classes in class-id order.
var categories = []struct {
	name    string
	classes []string
}{
	{"Women", []string{"dresses", "fragrances", "maternity", "swimwear"}},
	{"Men", []string{"accessories", "shirts", "pants", "sports-apparel"}},
	{"Children", []string{"infants", "newborn", "school-uniforms", "toddlers"}},
	{"Shoes", []string{"athletic", "kids", "mens", "womens"}},
	{"Music", []string{"country", "pop", "rock", "classical"}},
	{"Jewelry", []string{"birdal", "bracelets", "costume", "diamonds", "earings", "estate", "gold",
		"jewelry boxes", "loose stones", "mens watch", "pendants", "rings", "semi-precious", "womens watch"}},
	{"Home", []string{"accent", "bathroom", "bedding", "blinds/shades", "curtains/drapes", "decor",
		"flatware", "furniture", "glassware", "kids", "lighting", "mattresses", "paint", "rugs", "tables", "wallpaper"}},
	{"Sports", []string{"archery", "athletic shoes", "baseball", "basketball", "camping", "fishing",
		"fitness", "football", "golf", "guns", "hockey", "optics", "outdoor", "pools", "sailing", "tennis"}},
	{"Books", []string{"arts", "business", "computers", "cooking", "entertainment", "fiction", "history",
		"home repair", "mystery", "parenting", "reference", "romance", "science", "self-help", "sports", "travel"}},
	{"Electronics", []string{"audio", "automotive", "camcorders", "cameras", "computers", "disk drives",
		"dvd/vcr players", "karoke", "memory", "monitors", "musical", "personal", "portable", "scanners",
		"stereo", "televisions", "wireless"}},
}

// brandSyllables build brand names: the class syllable(s) then the category
// syllable, e.g. Men/accessories -> "amalgimporto".
var brandSyllables = []string{"amalg", "importo", "exporti", "edu pack", "scholar", "corp", "namele", "univ", "maxi", "brand"}

// syllables build store, company, manufacturer and product names.
var syllables = []string{"ought", "able", "pri", "ese", "anti", "cally", "ation", "eing", "bar", "n st"}

var colors = []string{
	"almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
	"brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral", "cornflower",
	"cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest",
	"frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
	"khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
	"metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid",
	"pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy",
	"royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
	"steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow",
}

var units = []string{"Unknown", "Each", "Dozen", "Case", "Pallet", "Gross", "Carton", "Box", "Bunch",
	"Bundle", "Oz", "Lb", "Ton", "Ounce", "Pound", "Tsp", "Tbl", "Cup", "Dram", "Gram", "N/A"}

var sizes = []string{"petite", "small", "medium", "large", "extra large", "economy", "N/A"}

var firstNames = []string{"James", "John", "Robert", "Michael", "William", "David", "Richard", "Charles",
	"Joseph", "Thomas", "Mary", "Patricia", "Linda", "Barbara", "Elizabeth", "Jennifer", "Maria", "Susan",
	"Margaret", "Dorothy", "Lisa", "Nancy", "Karen", "Betty", "Helen", "Sandra", "Donna", "Carol", "Ruth",
	"Sharon", "Michelle", "Laura", "Sarah", "Kimberly", "Deborah", "Jessica", "Shirley", "Cynthia",
	"Angela", "Melissa", "Brenda", "Amy", "Anna", "Rebecca", "Virginia", "Kathleen", "Pamela", "Martha",
	"Debra", "Amanda", "Stephanie", "Carolyn", "Christine", "Marie", "Janet", "Catherine", "Frances",
	"Ann", "Joyce", "Diane", "Alice", "Julie", "Heather", "Teresa", "Doris", "Gloria", "Evelyn", "Jean",
	"Cheryl", "Mildred", "Katherine", "Joan", "Ashley", "Judith", "Rose", "Janice", "Kelly", "Nicole",
	"Judy", "Christina", "Kathy", "Theresa", "Beverly", "Denise", "Tammy", "Irene", "Jane", "Lori"}

var lastNames = []string{"Smith", "Johnson", "Williams", "Jones", "Brown", "Davis", "Miller", "Wilson",
	"Moore", "Taylor", "Anderson", "Thomas", "Jackson", "White", "Harris", "Martin", "Thompson", "Garcia",
	"Martinez", "Robinson", "Clark", "Rodriguez", "Lewis", "Lee", "Walker", "Hall", "Allen", "Young",
	"Hernandez", "King", "Wright", "Lopez", "Hill", "Scott", "Green", "Adams", "Baker", "Gonzalez",
	"Nelson", "Carter", "Mitchell", "Perez", "Roberts", "Turner", "Phillips", "Campbell", "Parker",
	"Evans", "Edwards", "Collins", "Stewart", "Sanchez", "Morris", "Rogers", "Reed", "Cook", "Morgan",
	"Bell", "Murphy", "Bailey", "Rivera", "Cooper", "Richardson", "Cox", "Howard", "Ward", "Torres",
	"Peterson", "Gray", "Ramirez", "James", "Watson", "Brooks", "Kelly", "Sanders", "Price", "Bennett",
	"Wood", "Barnes", "Ross", "Henderson", "Coleman", "Jenkins", "Perry", "Powell", "Long", "Patterson"}

var salutations = []string{"Mr.", "Mrs.", "Ms.", "Miss", "Sir", "Dr."}

var countries = []string{"UNITED STATES", "CANADA", "MEXICO", "GERMANY", "FRANCE", "JAPAN", "CHINA",
	"INDIA", "BRAZIL", "ITALY", "SPAIN", "PERU", "CHILE", "EGYPT", "KENYA", "NORWAY", "SWEDEN", "POLAND",
	"GREECE", "TURKEY", "VIETNAM", "THAILAND", "ICELAND", "IRELAND", "PORTUGAL", "AUSTRALIA"}

var streetNames = []string{"Main", "Oak", "Park", "Maple", "Pine", "Cedar", "Elm", "View", "Washington",
	"Lake", "Hill", "Walnut", "Spring", "North", "Ridge", "Lincoln", "Church", "Willow", "Mill", "Sunset",
	"Railroad", "Jackson", "Cherry", "West", "Highland", "Johnson", "Forest", "Jefferson", "Center",
	"Smith", "Meadow", "Franklin", "Poplar", "Woodland", "Hickory", "Second", "Third", "Fourth", "Fifth",
	"Sixth", "Seventh", "Eighth", "Ninth", "Tenth", "First", "Green", "Adams", "College", "Birch", "River"}

var streetTypes = []string{"Street", "ST", "Avenue", "Ave", "Boulevard", "Blvd", "Road", "RD", "Parkway",
	"Pkwy", "Way", "Wy", "Drive", "Dr.", "Circle", "Cir.", "Lane", "Ln", "Court", "Ct."}

var cities = []string{"Midway", "Fairview", "Oak Grove", "Five Points", "Pleasant Hill", "Centerville",
	"Riverside", "Mount Pleasant", "Oakland", "Greenwood", "Salem", "Georgetown", "Springfield",
	"Franklin", "Clinton", "Marion", "Union", "Lakeside", "Shiloh", "Edgewood", "Glendale", "Woodland",
	"Sunnyside", "Hillcrest", "Liberty", "Concord", "Jackson", "Newport", "Oak Hill", "Summit", "Bethel",
	"Spring Hill", "Lebanon", "Plainview", "Greenville", "Antioch", "Ashland", "Bridgeport", "Cedar Grove",
	"Deerfield", "Enterprise", "Friendship", "Harmony", "Hopewell", "Kingston", "Lakeview", "Macedonia",
	"Maple Grove", "Mount Zion", "New Hope", "Oakdale", "Pine Grove", "Red Hill", "Riverdale", "Stringtown",
	"Unionville", "Waterloo", "Wildwood", "Wilson", "Woodville"}

// counties with their state and GMT offset. The queries' counties and
// states all appear; the list is weighted by repetition of common states.
var counties = []struct {
	county, state string
	gmt           int64 // hours
}{
	{"Williamson County", "TN", -5}, {"Davidson County", "TN", -5}, {"Rutherford County", "TN", -5},
	{"Rush County", "IN", -5}, {"La Porte County", "IN", -5}, {"Marion County", "IN", -5},
	{"Toole County", "MT", -7}, {"Jefferson County", "KY", -5}, {"Jefferson County", "AL", -6},
	{"Jefferson County", "CO", -7}, {"Dona Ana County", "NM", -7}, {"Bernalillo County", "NM", -7},
	{"Orange County", "CA", -8}, {"Los Angeles County", "CA", -8}, {"San Diego County", "CA", -8},
	{"Bronx County", "NY", -5}, {"Kings County", "NY", -5}, {"Franklin Parish", "LA", -6},
	{"Orleans Parish", "LA", -6}, {"Fulton County", "GA", -5}, {"Walker County", "GA", -5},
	{"Cook County", "IL", -6}, {"Lake County", "IL", -6}, {"King County", "WA", -8},
	{"Pierce County", "WA", -8}, {"Denver County", "CO", -7}, {"Franklin County", "OH", -5},
	{"Cuyahoga County", "OH", -5}, {"Harris County", "TX", -6}, {"Dallas County", "TX", -6},
	{"Williamson County", "TX", -6}, {"Travis County", "TX", -6}, {"Bergen County", "NJ", -5},
	{"Essex County", "NJ", -5}, {"Fayette County", "KY", -5}, {"Polk County", "IA", -6},
	{"Linn County", "IA", -6}, {"Pulaski County", "AR", -6}, {"Hinds County", "MS", -6},
	{"Harrison County", "MS", -6}, {"Cass County", "ND", -6}, {"Oklahoma County", "OK", -6},
	{"Tulsa County", "OK", -6}, {"Fairfax County", "VA", -5}, {"Richmond County", "VA", -5},
	{"Multnomah County", "OR", -8}, {"Lane County", "OR", -8}, {"Hennepin County", "MN", -6},
	{"Ramsey County", "MN", -6}, {"Dane County", "WI", -6}, {"Milwaukee County", "WI", -6},
	{"Hartford County", "CT", -5}, {"Fairfield County", "CT", -5}, {"Maricopa County", "AZ", -7},
	{"Wake County", "NC", -5}, {"Greenville County", "SC", -5}, {"Miami-Dade County", "FL", -5},
	{"Orange County", "FL", -5}, {"Wayne County", "MI", -5}, {"Allegheny County", "PA", -5},
	{"Jackson County", "MO", -6}, {"Sedgwick County", "KS", -6}, {"Douglas County", "NE", -6},
	{"Salt Lake County", "UT", -7}, {"Ada County", "ID", -7}, {"Clark County", "NV", -8},
	{"Minnehaha County", "SD", -6}, {"Kanawha County", "WV", -5}, {"Baltimore County", "MD", -5},
	{"Suffolk County", "MA", -5}, {"Laramie County", "WY", -7}, {"Anchorage Borough", "AK", -9},
	{"Honolulu County", "HI", -10}, {"Kennebec County", "ME", -5}, {"Merrimack County", "NH", -5},
	{"Chittenden County", "VT", -5}, {"New Castle County", "DE", -5}, {"Providence County", "RI", -5},
}

// zips is the pool of zip codes; an address's zip is a function of its
// city and county, so stores and customers of one town share zip codes
// (q24 joins s_zip = ca_zip). The pool holds the zips the queries list.
var zips = []string{"24128", "76232", "65084", "87816", "83926", "77556", "20548", "26231", "43848",
	"15126", "91137", "61265", "98294", "25782", "17920", "18426", "98235", "40081", "84093", "28577",
	"55565", "17183", "54601", "67897", "22752", "86284", "18376", "38607", "45200", "21756", "29741",
	"96765", "23932", "89360", "29839", "25989", "28898", "91068", "72550", "10390", "85669", "86197",
	"88274", "83405", "86475", "85392", "85460", "80348", "81792", "35709", "31904", "37057", "39231"}

var locationTypes = []string{"apartment", "condo", "single family"}

var educations = []string{"Primary", "Secondary", "College", "2 yr Degree", "4 yr Degree", "Advanced Degree", "Unknown"}

var maritals = []string{"M", "S", "D", "W", "U"}

var creditRatings = []string{"Good", "High Risk", "Low Risk", "Unknown"}

var buyPotentials = []string{"0-500", "501-1000", "1001-5000", "5001-10000", ">10000", "Unknown"}

var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

var shipTypes = []string{"REGULAR", "EXPRESS", "NEXT DAY", "OVERNIGHT", "TWO DAY", "LIBRARY"}

var shipCodes = []string{"AIR", "SURFACE", "SEA", "BIKE", "HAND CARRY", "MESSENGER", "COURIER"}

var carriers = []string{"UPS", "FEDEX", "AIRBORNE", "USPS", "DHL", "TBS", "ZHOU", "ZOUROS", "MSC",
	"LATVIAN", "ALLIANCE", "ORIENTAL", "BARIAN", "BOXBUNDLES", "GREAT EASTERN", "DIAMOND", "RUPEKSA",
	"GERMA", "HARMSTORF", "PRIVATECARRIER"}

var reasons = []string{"Package was damaged", "Stopped working", "Did not get it on time",
	"Not the product that was ordred", "Parts missing", "Does not work with a product that I have",
	"Gift exchange", "Did not like the color", "Did not like the model", "Did not like the make",
	"Did not like the warranty", "No service location in my area", "Found a better price in a store",
	"Found a better extended warranty in a store", "Not working any more", "Did not fit", "Wrong size",
	"Lost my job", "unauthoized purchase", "duplicate purchase", "its is a boy", "it is a girl"}

var callCenterNames = []string{"NY Metro", "Mid Atlantic", "North Midwest", "Pacific Northwest",
	"California", "Hawaii/Alaska", "Central Midwest", "South Midwest", "Southeast", "Northeast"}

var sizeClasses = []string{"small", "medium", "large"}

var storeHours = []string{"8AM-4PM", "8AM-12AM", "8AM-8AM"}

var webPageTypes = []string{"general", "order", "welcome", "ad", "feedback", "protected", "dynamic"}

var catalogTypes = []string{"bi-annual", "quarterly", "monthly"}

var promoPurposes = []string{"Unknown", "business", "holiday"}

var words = []string{"able", "about", "above", "across", "actually", "after", "again", "against",
	"almost", "already", "also", "always", "among", "another", "around", "available", "away", "back",
	"because", "become", "before", "being", "below", "best", "better", "between", "both", "business",
	"certain", "clear", "close", "common", "company", "complete", "concerned", "continue", "could",
	"current", "different", "during", "early", "either", "else", "enough", "especially", "even", "ever",
	"every", "example", "fact", "family", "final", "financial", "following", "full", "further", "general",
	"given", "good", "great", "group", "hard", "having", "high", "however", "human", "important",
	"including", "indeed", "individual", "instead", "interest", "itself", "just", "kind", "large", "late",
	"later", "least", "less", "likely", "little", "local", "long", "major", "many", "matter", "might",
	"more", "most", "much", "national", "natural", "necessary", "never", "new", "next", "normal", "now",
	"often", "only", "open", "other", "own", "particular", "past", "perhaps", "political", "possible",
	"present", "private", "probably", "public", "quite", "rather", "real", "recent", "right", "same",
	"several", "short", "significant", "similar", "simply", "since", "single", "small", "social", "special",
	"still", "strong", "such", "sure", "then", "there", "therefore", "these", "though", "through", "today",
	"together", "total", "under", "until", "usually", "various", "very", "well", "whole", "within",
	"without", "young"}
