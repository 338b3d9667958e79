import Foundation
internal import GRDB

/// The text matching behind thread search, as a SQL function every connection of the store has:
/// `hearth_contains(text, needle)` is 1 when `needle` occurs in `text` ignoring case and
/// diacritics ("Éclair" is found by "ecl"), else 0.
///
/// SQLite's own LIKE and lower() fold ASCII letters only, so a search for "über" would miss
/// "Über". Both arguments are passed as blobs (`CAST(x AS BLOB)`): text read as a C string would
/// stop at a NUL character, which stored text may hold (see `StoredText`).
public enum TextSearch {
    static let functionName = "hearth_contains"

    static let function = DatabaseFunction(functionName, argumentCount: 2, pure: true) { values in
        guard let text = Data.fromDatabaseValue(values[0]), let needle = Data.fromDatabaseValue(values[1]) else { return false }
        return contains(String(decoding: text, as: UTF8.self), String(decoding: needle, as: UTF8.self))
    }

    /// Whether `needle` occurs in `text` ignoring case and diacritics: the comparison every
    /// `ChatStore` engine's `threads(matching:)` makes (PostgreSQL's does it in Swift too).
    public static func contains(_ text: String, _ needle: String) -> Bool {
        text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
    }
}
