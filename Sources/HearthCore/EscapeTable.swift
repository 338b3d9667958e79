/// ASCII characters and the text each is written as when escaped (JSON's `\n`, HTML's
/// `&amp;`, Python's `\\`): the one loop the JSON, HTML and Python `repr` writers share.
public struct EscapeTable: Sendable {
    /// Indexed by code point; nil: the character is not in the table.
    private var texts = [String?](repeating: nil, count: 128)

    /// A table of `escapes`, whose characters must be ASCII (the others go through each
    /// writer's own rule).
    public init(_ escapes: KeyValuePairs<Unicode.Scalar, String>) {
        for (scalar, text) in escapes {
            precondition(scalar.isASCII, "an escape table holds ASCII characters only")
            texts[Int(scalar.value)] = text
        }
    }

    /// The text `scalar` is escaped as, when the table has it.
    public subscript(_ scalar: Unicode.Scalar) -> String? {
        scalar.isASCII ? texts[Int(scalar.value)] : nil
    }

    /// Appends `s` to `out`: a character in the table as its text, any other through `other`.
    public func escape(_ s: String, into out: inout String,
                       other: (Unicode.Scalar, inout String) -> Void = { scalar, out in out.unicodeScalars.append(scalar) }) {
        for scalar in s.unicodeScalars {
            if let text = self[scalar] { out += text } else { other(scalar, &out) }
        }
    }

    /// `value` in lowercase hexadecimal, with leading zeros to `width` digits.
    public static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
