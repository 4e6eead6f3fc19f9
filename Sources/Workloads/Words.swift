import Projections

/// The vocabulary of the simulated apps: names, places and the kind of things their users write.
enum Words {
    static let cities: [(name: String, lat: Double, lon: Double)] = [
        ("San Francisco", 37.7749, -122.4194), ("Austin", 30.2672, -97.7431), ("Brooklyn", 40.6782, -73.9442),
        ("Seattle", 47.6062, -122.3321), ("Chicago", 41.8781, -87.6298), ("Denver", 39.7392, -104.9903),
        ("Portland", 45.5152, -122.6784), ("Boston", 42.3601, -71.0589), ("Atlanta", 33.7490, -84.3880),
        ("Minneapolis", 44.9778, -93.2650), ("San Diego", 32.7157, -117.1611), ("Nashville", 36.1627, -86.7816),
        ("Toronto", 43.6532, -79.3832), ("London", 51.5072, -0.1276), ("Berlin", 52.5200, 13.4050),
        ("Bengaluru", 12.9716, 77.5946), ("Sydney", -33.8688, 151.2093), ("Lisbon", 38.7223, -9.1393),
    ]
    static let firstNames = [
        "Ava", "Liam", "Maya", "Noah", "Zoe", "Ethan", "Priya", "Mateo", "Chloe", "Omar", "Hana", "Lucas", "Aisha",
        "Leo", "Sofia", "Kai", "Nina", "Arjun", "Grace", "Diego", "Emma", "Yuki", "Sam", "Isla", "Ravi", "Mia",
        "Jonah", "Lena", "Tariq", "Ivy", "Felix", "Ana", "Theo", "Nora", "Ben", "Sara", "Max", "Lila", "Owen", "Rosa",
    ]
    static let lastNames = [
        "Nguyen", "Garcia", "Smith", "Patel", "Kim", "Johnson", "Okafor", "Rossi", "Müller", "Silva", "Chen", "Brown",
        "Haddad", "Kowalski", "Tanaka", "Lopez", "Walker", "Singh", "Dubois", "Moreau", "Ali", "Jensen", "Costa",
    ]
    static let abouts = [
        "Two dogs, zero chill. Always up for a morning loop around the park.",
        "New in town with a very social beagle. Looking for walking buddies!",
        "Weekend hiker, weekday fetch champion.", "Rescue-dog parent. Coffee first, then the dog park.",
    ]
    static let interests = [
        "hiking", "fetch", "agility", "dog parks", "beach walks", "puppy training", "board games", "live music",
        "cooking", "running", "photography", "trivia", "climbing", "coffee", "yoga", "film",
    ]
    static let dogNames = ["Biscuit", "Luna", "Max", "Pepper", "Ollie", "Bella", "Rocky", "Mochi", "Daisy", "Juniper"]
    static let breeds = ["beagle", "labrador", "corgi", "border collie", "pug", "husky", "poodle mix", "greyhound"]
    static let chat = [
        "hey!", "how are you?", "did you see that?", "haha yes", "omw", "running 5 min late", "sounds good",
        "what time works for you?", "can't wait", "lol", "sure thing", "thanks so much", "see you there",
        "let me check my calendar", "that was amazing", "are you free tomorrow?", "call me when you can",
        "just landed", "good morning", "love this", "no worries", "I'll bring snacks", "that's hilarious",
        "send me the pics", "happy birthday!!", "same here", "totally agree", "where are you?",
    ]
    static let dogChat = [
        "want to walk at 7?", "Biscuit loved meeting Luna", "the park by the lake?", "bring treats",
        "she pulled the whole way lol", "is your pup okay with big dogs?", "rainy walk today",
        "leash or off-leash area?",
        "we're at the north gate", "good boy report: excellent", "see you at the dog run", "tired pups = happy owners",
    ]
    static let activityChat = [
        "what should I bring?", "is there parking nearby?", "I'll bring chips and salsa", "who's in for catan?",
        "can I bring a friend?", "running a bit late", "doors at 7", "BYOB", "this is going to be fun",
        "meet by the fountain", "don't forget the speaker", "rain plan: my place",
    ]
    static let captions = ["look at this", "sunset from today", "new haircut lol", "our view", "guess where"]
    static let groupNames = [
        "Book Club", "Climbing Crew", "Roommates", "Family", "Trivia Tuesday", "Soccer Sundays", "Brunch Squad",
        "Road Trip", "Dog Park Regulars", "Study Group",
    ]
    static let walkTitles = [
        "Morning loop at the park", "Sunset beach walk", "Trail walk with the pups", "Puppy playdate",
    ]
    static let partyTitles = [
        "Game night", "Friendsgiving potluck", "Rooftop hangout", "Board games & pizza", "Birthday dinner",
        "Movie marathon", "Trivia at the pub", "Backyard BBQ",
    ]
    static let places = ["Central Park", "Riverside", "Main St 12", "The Commons", "Harbor Pier", "Oak Hill"]
    static let thanks = [
        "the coffee this morning", "helping me move", "listening yesterday", "the ride to the airport",
        "covering my shift", "the birthday surprise", "always making me laugh", "the book recommendation",
    ]
    /// Single words of chat, for text made a word at a time (the benchmarks' chat mix).
    static let vocabulary = [
        "hey", "hi", "ok", "yes", "no", "lol", "thanks", "sure", "see", "you", "tomorrow", "tonight", "at", "the",
        "park", "walk", "dog", "coffee", "party", "game", "night", "are", "we", "still", "on", "for", "what", "time",
        "sounds", "good", "great", "awesome", "love", "it", "can't", "wait", "running", "late", "be", "there", "in",
        "ten", "minutes", "where", "is", "everyone", "just", "got", "home", "did", "watch", "that", "movie", "send",
        "me", "photo", "haha", "omg", "really", "maybe", "next", "week", "weekend", "friday", "saturday", "brunch",
        "with", "Luna", "Max", "Bella", "Charlie", "beach", "trail", "meet", "near", "entrance", "bring", "snacks",
        "water", "rain", "sunny", "cold", "so", "happy", "birthday", "congrats", "miss", "call", "later", "busy",
        "work", "done", "free", "now", "how", "about", "this", "one", "I", "think", "should", "go", "again", "soon",
        "👍", "😂", "❤️", "🐶", "🎉",
    ]
}
