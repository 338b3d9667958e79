/// The Unicode facts the pre-tokenizer regexes ask about a code point: its general category
/// group (`\p{L}`, `\p{N}`, ...) and whether it is white space (`\s`). The groups are those of
/// llama.cpp's `unicode_cpt_flags`, read here from Swift's own Unicode tables.
struct CodepointFlags: OptionSet, Sendable {
    let rawValue: UInt16

    static let undefined = CodepointFlags(rawValue: 1 << 0)    // Cn
    static let number = CodepointFlags(rawValue: 1 << 1)       // \p{N}
    static let letter = CodepointFlags(rawValue: 1 << 2)       // \p{L}
    static let separator = CodepointFlags(rawValue: 1 << 3)    // \p{Z}
    static let mark = CodepointFlags(rawValue: 1 << 4)         // \p{M}
    static let punctuation = CodepointFlags(rawValue: 1 << 5)  // \p{P}
    static let symbol = CodepointFlags(rawValue: 1 << 6)       // \p{S}
    static let control = CodepointFlags(rawValue: 1 << 7)      // \p{C} other than Cn
    static let whitespace = CodepointFlags(rawValue: 1 << 8)   // \s: the White_Space property

    /// Flags of a position outside the text being split: none at all.
    static let outside: CodepointFlags = []

    static func of(_ scalar: UInt32) -> CodepointFlags {
        scalar < 128 ? ascii[Int(scalar)] : compute(scalar)
    }

    private static let ascii: [CodepointFlags] = (0..<128).map { compute(UInt32($0)) }

    private static func compute(_ value: UInt32) -> CodepointFlags {
        guard let scalar = Unicode.Scalar(value) else { return .undefined }
        let properties = scalar.properties
        var flags: CodepointFlags
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            flags = .letter
        case .nonspacingMark, .spacingMark, .enclosingMark:
            flags = .mark
        case .decimalNumber, .letterNumber, .otherNumber:
            flags = .number
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation:
            flags = .punctuation
        case .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            flags = .symbol
        case .spaceSeparator, .lineSeparator, .paragraphSeparator:
            flags = .separator
        case .control, .format, .surrogate, .privateUse:
            flags = .control
        case .unassigned:
            flags = .undefined
        @unknown default:
            flags = .undefined
        }
        if properties.isWhitespace { flags.insert(.whitespace) }
        return flags
    }
}
