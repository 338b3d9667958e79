/// An incremental recognizer of one JSON object (RFC 8259) in UTF-8: a pushdown automaton fed
/// one byte at a time. It answers whether the bytes so far can still grow into one JSON object
/// (`consume` refuses the first byte that makes that impossible) and whether they are one
/// already (`isComplete`). JSON mode asks it about every token it might sample.
///
/// The stack of open containers is one bit per level, so the whole state is a few bytes:
/// trying a token on a copy costs nothing to set up, and equal states compare and hash equal.
///
/// It is stricter than the RFC's grammar where a model held to the grammar could otherwise
/// produce what parsers reject, or never finish:
/// - the top level is an object;
/// - strings are valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), and a
///   `\u` escape of a surrogate is a high surrogate followed at once by an escaped low one;
/// - outside strings, a run of whitespace holds at most `maxWhitespaceRun` bytes and one line
///   feed (one line break and its indentation, as pretty printers write); and at most
///   `maxDepth` containers are open at once. Held to the RFC alone, small models fill the
///   answer with blank lines.
///
/// ```swift
/// var json = JSONRecognizer()
/// json.consume(Array(#"{"a": [1, "#.utf8))   // true: still a beginning of an object
/// json.consume(Array("]".utf8))               // false: a value must follow the comma
/// json.consume(Array("2]}".utf8))             // true
/// json.isComplete                             // true
/// ```
public struct JSONRecognizer: Hashable, Sendable {
    private enum Mode: UInt8 {
        /// Before the top-level `{`.
        case start
        /// After `{`: a key or `}`.
        case objectOpen
        /// After a comma in an object: a key.
        case key
        /// After a key: the colon.
        case colon
        /// After a colon, or a comma in an array: a value.
        case value
        /// After `[`: a value or `]`.
        case arrayOpen
        /// After a value in a container: a comma or the closer.
        case afterValue
        /// The top-level object has closed; only whitespace may follow.
        case done
        /// Inside a string.
        case string
        /// After a backslash in a string.
        case escape
        /// In the four hex digits of a `\u` escape.
        case hex
        /// After a high surrogate escape: the backslash of its low half.
        case pairBackslash
        /// After a high surrogate escape and a backslash: the `u`.
        case pairU
        /// Inside a multi-byte UTF-8 character in a string.
        case character
        /// Inside `true`, `false` or `null`.
        case literal
        /// Number parts: after `-`, after a leading `0`, in the integer digits, after `.`, in the
        /// fraction, after `e`, after the exponent's sign, in the exponent's digits.
        case minus, zero, integer, dot, fraction, exponent, exponentSign, exponentDigits
    }

    private var mode = Mode.start
    /// Bit `i` is set when the container at depth `i + 1` is an array, clear for an object.
    private var arrays: UInt64 = 0
    /// Containers open.
    private var depth: UInt8 = 0
    /// Outside strings: whitespace bytes in the current run. In a literal: bytes matched. In a
    /// hex escape: digits read. In a character: continuation bytes still to come.
    private var count: UInt8 = 0
    /// Outside strings: 1 once the current whitespace run holds a line feed. In a literal: which
    /// one (an index into `literals`). In a character: the range of the next continuation byte
    /// (an index into `continuationRanges`). In a hex escape: 1 when it must be the low half of
    /// a surrogate pair.
    private var detail: UInt8 = 0
    /// In a hex escape: the digits read so far, as a number.
    private var code: UInt16 = 0
    /// In a string: whether it is an object key (a colon follows) or a value.
    private var inKey = false
    private let depthLimit: UInt8
    private let whitespaceLimit: UInt8

    /// Most containers open at once.
    public var maxDepth: Int { Int(depthLimit) }
    /// Most whitespace bytes in a row outside strings (of which one may be a line feed).
    public var maxWhitespaceRun: Int { Int(whitespaceLimit) }

    /// A recognizer at the start of a document. `maxDepth` is clamped to 1...64 (the stack is
    /// 64 bits) and `maxWhitespaceRun` to 0...255. The default run of 20 leaves room for a
    /// newline and indentation several levels deep, and none for a model that repeats newlines.
    public init(maxDepth: Int = 64, maxWhitespaceRun: Int = 20) {
        depthLimit = UInt8(min(max(maxDepth, 1), 64))
        whitespaceLimit = UInt8(min(max(maxWhitespaceRun, 0), 255))
    }

    /// Whether the bytes consumed so far are one whole JSON object (trailing whitespace allowed).
    public var isComplete: Bool { mode == .done }

    /// Consumes `byte` and returns true if the bytes so far are still the beginning of one JSON
    /// object; otherwise returns false and leaves the recognizer as it was.
    @discardableResult
    public mutating func consume(_ byte: UInt8) -> Bool {
        var next = self
        guard next.step(byte) else { return false }
        self = next
        return true
    }

    /// Consumes all of `bytes` if they keep the bytes so far the beginning of one JSON object, and
    /// returns true; otherwise returns false and leaves the recognizer as it was.
    @discardableResult
    public mutating func consume(_ bytes: some Sequence<UInt8>) -> Bool {
        var next = self
        for byte in bytes {
            guard next.step(byte) else { return false }
        }
        self = next
        return true
    }

    /// Whether `bytes` form the beginning of one JSON object (the empty sequence included).
    public static func isPrefix(_ bytes: some Sequence<UInt8>) -> Bool {
        var recognizer = JSONRecognizer()
        return recognizer.consume(bytes)
    }

    /// Whether `bytes` are one JSON object.
    public static func isObject(_ bytes: some Sequence<UInt8>) -> Bool {
        var recognizer = JSONRecognizer()
        return recognizer.consume(bytes) && recognizer.isComplete
    }

    // MARK: The automaton

    /// Advances by one byte; on false the state is garbage, so callers step a copy.
    @inline(__always)
    mutating func step(_ byte: UInt8) -> Bool {
        switch mode {
        case .start:
            return byte == Byte.openBrace ? open(array: false) : whitespace(byte)
        case .objectOpen:
            if byte == Byte.quote { return beginString(key: true) }
            if byte == Byte.closeBrace { return close() }
            return whitespace(byte)
        case .key:
            return byte == Byte.quote ? beginString(key: true) : whitespace(byte)
        case .colon:
            if byte == Byte.colon { return enter(.value) }
            return whitespace(byte)
        case .value:
            return beginValue(byte) || whitespace(byte)
        case .arrayOpen:
            if byte == Byte.closeBracket { return close() }
            return beginValue(byte) || whitespace(byte)
        case .afterValue:
            return afterValue(byte)
        case .done:
            return whitespace(byte)
        case .string:
            return stringByte(byte)
        case .escape:
            switch byte {
            case Byte.quote, Byte.backslash, Byte.slash, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                 UInt8(ascii: "r"), UInt8(ascii: "t"):
                return enterString()
            case UInt8(ascii: "u"):
                return enter(.hex)
            default:
                return false
            }
        case .hex:
            return hexDigit(byte)
        case .pairBackslash:
            return byte == Byte.backslash && enter(.pairU)
        case .pairU:
            guard byte == UInt8(ascii: "u") else { return false }
            _ = enter(.hex)
            detail = 1
            return true
        case .character:
            let range = Self.continuationRanges[Int(detail)]
            guard byte >= range.low && byte <= range.high else { return false }
            count -= 1
            detail = 0
            if count == 0 { mode = .string }
            return true
        case .literal:
            let literal = Self.literals[Int(detail)]
            guard byte == literal[Int(count)] else { return false }
            count += 1
            return Int(count) < literal.count || endValue()
        case .minus:
            if byte == Byte.zero { return enter(.zero) }
            return Byte.isDigit(byte) && enter(.integer)
        case .zero:
            if byte == Byte.dot { return enter(.dot) }
            if byte | 0x20 == UInt8(ascii: "e") { return enter(.exponent) }
            // A leading zero is the whole integer part: `01` is not a number.
            return !Byte.isDigit(byte) && endNumber(byte)
        case .integer:
            if Byte.isDigit(byte) { return true }
            if byte == Byte.dot { return enter(.dot) }
            if byte | 0x20 == UInt8(ascii: "e") { return enter(.exponent) }
            return endNumber(byte)
        case .dot:
            return Byte.isDigit(byte) && enter(.fraction)
        case .fraction:
            if Byte.isDigit(byte) { return true }
            if byte | 0x20 == UInt8(ascii: "e") { return enter(.exponent) }
            return endNumber(byte)
        case .exponent:
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") { return enter(.exponentSign) }
            return Byte.isDigit(byte) && enter(.exponentDigits)
        case .exponentSign:
            return Byte.isDigit(byte) && enter(.exponentDigits)
        case .exponentDigits:
            return Byte.isDigit(byte) || endNumber(byte)
        }
    }

    /// Switches to `mode` with its counters cleared, so that equal positions are equal states.
    @inline(__always)
    private mutating func enter(_ mode: Mode) -> Bool {
        self.mode = mode
        count = 0
        detail = 0
        code = 0
        return true
    }

    @inline(__always)
    private mutating func whitespace(_ byte: UInt8) -> Bool {
        guard count < whitespaceLimit else { return false }
        if byte == Byte.newline {
            guard detail == 0 else { return false }
            detail = 1
        } else {
            guard byte == Byte.space || byte == Byte.tab || byte == Byte.carriageReturn else { return false }
        }
        count += 1
        return true
    }

    private mutating func beginValue(_ byte: UInt8) -> Bool {
        switch byte {
        case Byte.openBrace: return open(array: false)
        case Byte.openBracket: return open(array: true)
        case Byte.quote: return beginString(key: false)
        case UInt8(ascii: "-"): return enter(.minus)
        case Byte.zero: return enter(.zero)
        case UInt8(ascii: "1")...UInt8(ascii: "9"): return enter(.integer)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            _ = enter(.literal)
            detail = byte == UInt8(ascii: "t") ? 0 : byte == UInt8(ascii: "f") ? 1 : 2
            count = 1
            return true
        default: return false
        }
    }

    private mutating func open(array: Bool) -> Bool {
        guard depth < depthLimit else { return false }
        if array { arrays |= 1 << UInt64(depth) }
        depth += 1
        return enter(array ? .arrayOpen : .objectOpen)
    }

    /// Whether the innermost open container is an array.
    private var inArray: Bool { depth > 0 && arrays & (1 << UInt64(depth - 1)) != 0 }

    /// Closes the innermost container; the caller has checked that the closer matches it.
    private mutating func close() -> Bool {
        depth -= 1
        arrays &= ~(1 << UInt64(depth))
        return enter(depth == 0 ? .done : .afterValue)
    }

    /// A value inside a container just ended (the top-level object ends in `close`).
    private mutating func endValue() -> Bool {
        enter(.afterValue)
    }

    private mutating func afterValue(_ byte: UInt8) -> Bool {
        switch byte {
        case Byte.comma: return enter(inArray ? .value : .key)
        case Byte.closeBrace: return !inArray && close()
        case Byte.closeBracket: return inArray && close()
        default: return whitespace(byte)
        }
    }

    /// A number ends at the first byte that cannot continue it, which belongs to what follows.
    private mutating func endNumber(_ byte: UInt8) -> Bool {
        _ = endValue()
        return afterValue(byte)
    }

    private mutating func beginString(key: Bool) -> Bool {
        _ = enterString()
        inKey = key
        return true
    }

    /// Back in a string's plain text, keeping whether it is a key.
    private mutating func enterString() -> Bool {
        enter(.string)
    }

    @inline(__always)
    private mutating func stringByte(_ byte: UInt8) -> Bool {
        if byte >= 0x20 && byte < 0x80 {
            if byte == Byte.quote {
                let key = inKey
                inKey = false
                return key ? enter(.colon) : endValue()
            }
            if byte == Byte.backslash { return enter(.escape) }
            return true
        }
        // Control characters must be escaped; a byte past ASCII begins a multi-byte character.
        guard byte >= 0x80 else { return false }
        let range: UInt8
        switch byte {
        case 0xC2...0xDF: count = 1; range = 0
        case 0xE0: count = 2; range = 1       // no overlong three-byte forms
        case 0xED: count = 2; range = 2       // no surrogates (U+D800–U+DFFF)
        case 0xE1...0xEF: count = 2; range = 0
        case 0xF0: count = 3; range = 3       // no overlong four-byte forms
        case 0xF4: count = 3; range = 4       // nothing past U+10FFFF
        case 0xF1...0xF3: count = 3; range = 0
        default: return false                 // a continuation byte, C0, C1 or F5–FF
        }
        mode = .character
        detail = range
        return true
    }

    private mutating func hexDigit(_ byte: UInt8) -> Bool {
        let digit: UInt8
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
        default: return false
        }
        let value = code << 4 | UInt16(digit)
        let digits = count + 1
        // The escape's value now lies in [low, high], whatever digits follow; refuse the digit
        // as soon as every value in that range is one the escape may not have.
        let shift = 4 * (4 - UInt32(digits))
        let low = UInt32(value) << shift, high = low | ((1 << shift) - 1)
        let lowSurrogates: ClosedRange<UInt32> = 0xDC00...0xDFFF
        if detail == 1 {
            guard high >= lowSurrogates.lowerBound && low <= lowSurrogates.upperBound else { return false }
        } else {
            guard !(low >= lowSurrogates.lowerBound && high <= lowSurrogates.upperBound) else { return false }
        }
        guard digits == 4 else {
            code = value
            count = digits
            return true
        }
        if detail == 0 && (0xD800...0xDBFF).contains(value) { return enter(.pairBackslash) }
        return enterString()
    }

    private static let literals: [[UInt8]] = [Array("true".utf8), Array("false".utf8), Array("null".utf8)]

    /// The ranges a continuation byte may take: any, or the narrower second byte after E0, ED,
    /// F0 and F4 (Unicode's table of well-formed UTF-8, chapter 3).
    private static let continuationRanges: [(low: UInt8, high: UInt8)] = [
        (0x80, 0xBF), (0xA0, 0xBF), (0x80, 0x9F), (0x90, 0xBF), (0x80, 0x8F),
    ]

    private enum Byte {
        static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
        static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
        static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), slash = UInt8(ascii: "/")
        static let colon = UInt8(ascii: ":"), comma = UInt8(ascii: ","), dot = UInt8(ascii: ".")
        static let zero = UInt8(ascii: "0")
        static let space = UInt8(ascii: " "), newline = UInt8(ascii: "\n"), tab = UInt8(ascii: "\t")
        static let carriageReturn = UInt8(ascii: "\r")

        @inline(__always)
        static func isDigit(_ byte: UInt8) -> Bool { byte &- zero < 10 }
    }
}
