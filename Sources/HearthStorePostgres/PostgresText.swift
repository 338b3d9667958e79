/// Text as the PostgreSQL store keeps it, so that it comes back byte for byte.
///
/// PostgreSQL's `text` cannot hold the NUL character, which JSON allows and a byte-level
/// tokenizer can produce. The store writes NUL as DLE "0" and DLE itself as DLE DLE (DLE, U+0010,
/// "data link escape", appears in no text people write), so every string comes back as it was,
/// and all other text reads as itself in psql, searches and indexes. `bytea` would have kept the
/// bytes too, but every column would then read as hex.
enum PostgresText {
    private static let nul: Unicode.Scalar = "\u{0}"
    private static let escape: Unicode.Scalar = "\u{10}"

    /// The text to store for `text`.
    static func encode(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x00 || $0 == 0x10 }) else { return text }
        var stored = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case nul: stored.append(escape); stored.append("0")
            case escape: stored.append(escape); stored.append(escape)
            default: stored.append(scalar)
            }
        }
        return String(stored)
    }

    static func encode(_ text: String?) -> String? {
        text.map { encode($0) }
    }

    /// The text that `stored` was made from. A DLE not followed by "0" or DLE (a row edited by
    /// hand) is kept as it is.
    static func decode(_ stored: String) -> String {
        guard stored.utf8.contains(0x10) else { return stored }
        var text = String.UnicodeScalarView()
        var scalars = stored.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == escape else {
                text.append(scalar)
                continue
            }
            switch scalars.next() {
            case "0": text.append(nul)
            case escape: text.append(escape)
            case let other?: text.append(escape); text.append(other)
            case nil: text.append(escape)
            }
        }
        return String(text)
    }

    static func decode(_ stored: String?) -> String? {
        stored.map { decode($0) }
    }
}
