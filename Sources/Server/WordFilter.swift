/// Terms a server refuses in the text users write (message bodies, profile fields, activity titles and
/// descriptions, group names), matched case-insensitively as whole words.
///
/// A word is a run of letters and digits of any script; everything else separates words. A term matches only
/// where its words stand whole and in order in the text: `cat` matches "A cat!" and "CAT", not "category" or
/// "cat5"; `bad word` matches "a BAD   word" (the words in sequence, whatever separates them). A term with no
/// letter or digit can never match and is ignored. Lowercasing is Swift's `lowercased()`.
///
/// Matching lowercases the text once, splits it into words, and looks each word up in a set (single-word terms)
/// and in a table of multi-word terms by their first word: its cost grows with the text, not with the terms.
public struct WordFilter: Sendable {
    /// Terms of one word.
    private var words: Set<String> = []
    /// Terms of several words, by their first word.
    private var phrases: [String: [[String]]] = [:]

    /// A filter that refuses nothing.
    public init() {}

    /// A filter that refuses `terms`, each one or more words separated by spaces.
    public init(terms: some Sequence<String>) {
        for term in terms {
            let parts = Self.words(in: term.lowercased()).map(String.init)
            guard let first = parts.first else { continue }
            if parts.count == 1 {
                words.insert(first)
            } else {
                phrases[first, default: []].append(parts)
            }
        }
    }

    /// A filter from a word-filter file's text: one term a line; blank lines and lines starting with `#`
    /// (after leading spaces) are ignored.
    public init(fileContents text: String) {
        self.init(
            terms: text.split(whereSeparator: \.isNewline).lazy.map { line in
                line.trimmingPrefix(while: \.isWhitespace)
            }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            .map(String.init))
    }

    /// Whether the filter refuses nothing.
    public var isEmpty: Bool { words.isEmpty && phrases.isEmpty }

    /// Whether `text` holds one of the terms as whole words.
    public func matches(_ text: String) -> Bool {
        if isEmpty { return false }
        let lowered = text.lowercased()
        let tokens = Self.words(in: lowered)
        for (index, token) in tokens.enumerated() {
            let word = String(token)
            if words.contains(word) { return true }
            guard let candidates = phrases[word] else { continue }
            for phrase in candidates where index + phrase.count <= tokens.count {
                if zip(phrase, tokens[index..<index + phrase.count]).allSatisfy({ $0 == $1 }) { return true }
            }
        }
        return false
    }

    /// The words of `text`: its maximal runs of letters and digits.
    static func words(in text: String) -> [Substring] {
        text.split(whereSeparator: { !($0.isLetter || $0.isNumber) })
    }
}
