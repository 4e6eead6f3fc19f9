/// The limits the rules hold a command's fields to, in one place: the rules check them and the server's OpenAPI
/// document states them. Lengths count characters (grapheme clusters) unless they say bytes.
public enum FieldLimits {
    /// The longest id, in bytes.
    public static let idBytes = 128
    /// What an id is, as a regular expression: 1–``idBytes`` bytes of ASCII letters, digits and `-_.:@+`.
    public static let idPattern = "^[A-Za-z0-9._:@+-]{1,128}$"
    /// The longest name (a user's, a nickname, a group's, a dog's, a feeling's).
    public static let nameLength = 100
    /// The longest activity title.
    public static let titleLength = 200
    /// The longest message or gratitude body.
    public static let bodyLength = 10_000
    /// The longest feeling emoji.
    public static let emojiLength = 16
}
