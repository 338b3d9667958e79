import HearthCore

/// llama.cpp's grammar format (GBNF): rules `name ::= alternatives`, string literals, character
/// classes (`[a-z]`, `[^\n]`), `.` for any character, groups, `*` `+` `?` `{m}` `{m,}` `{m,n}`,
/// `#` comments, and tokens (`<[id]>`, `<text>`, negated with `!`). The root rule is `root`.
extension Grammar {
    /// Parses GBNF text. `token` resolves `<text>` to a token id (a grammar without such
    /// tokens needs none). Errors name the line and column.
    public init(gbnf source: String, root: String = "root", token: ((String) -> Int32?)? = nil) throws {
        var parser = GBNFParser(source: source, token: token)
        try parser.parse()
        self = try parser.builder.build(root: root)
    }
}

struct GBNFParser {
    let text: [UInt32]
    var pos = 0
    var builder = GrammarBuilder()
    let token: ((String) -> Int32?)?

    init(source: String, token: ((String) -> Int32?)?) {
        text = source.unicodeScalars.map(\.value)
        self.token = token
    }

    var current: UInt32? { pos < text.count ? text[pos] : nil }
    func peek(_ offset: Int) -> UInt32? { pos + offset < text.count ? text[pos + offset] : nil }

    func fail(_ message: String) -> HearthError {
        var line = 1, column = 1
        for c in text[..<min(pos, text.count)] {
            if c == 10 { line += 1; column = 1 } else { column += 1 }
        }
        return .invalidArgument("Grammar error at line \(line), column \(column): \(message).")
    }

    static func isWordCharacter(_ c: UInt32) -> Bool {
        (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c == 45 || c == 95
    }

    mutating func skipSpace(newlines: Bool) {
        while let c = current {
            if c == 35 {  // '#': to the end of the line
                while let d = current, d != 10, d != 13 { pos += 1 }
            } else if c == 32 || c == 9 || (newlines && (c == 10 || c == 13)) {
                pos += 1
            } else {
                break
            }
        }
    }

    mutating func name() throws -> String {
        let start = pos
        while let c = current, Self.isWordCharacter(c) { pos += 1 }
        guard pos > start else { throw fail("expected a rule name") }
        return String(String.UnicodeScalarView(text[start..<pos].compactMap(Unicode.Scalar.init)))
    }

    mutating func integer() throws -> Int {
        let start = pos
        while let c = current, c >= 48 && c <= 57 { pos += 1 }
        guard pos > start, pos - start <= 9 else { throw fail("expected a number") }
        return text[start..<pos].reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    mutating func parse() throws {
        skipSpace(newlines: true)
        while current != nil {
            let ruleName = try name()
            skipSpace(newlines: false)
            guard current == 58, peek(1) == 58, peek(2) == 61 else { throw fail("expected ::= after \(ruleName)") }
            pos += 3
            skipSpace(newlines: true)
            let alternatives = try parseAlternatives(rule: ruleName, nested: false)
            if builder.has(ruleName) && !builder.alternatives(of: builder.reference(ruleName)).isEmpty {
                throw fail("rule \(ruleName) is defined twice")
            }
            builder.define(ruleName, alternatives)
            if current == 13 { pos += peek(1) == 10 ? 2 : 1 } else if current == 10 { pos += 1 } else if current != nil {
                throw fail("expected the end of the line")
            }
            skipSpace(newlines: true)
        }
    }

    mutating func parseAlternatives(rule: String, nested: Bool) throws -> [[Grammar.Element]] {
        var alternatives = [try parseSequence(rule: rule, nested: nested)]
        while current == 124 {  // '|'
            pos += 1
            skipSpace(newlines: true)
            alternatives.append(try parseSequence(rule: rule, nested: nested))
        }
        return alternatives
    }

    mutating func escapedCharacter() throws -> UInt32 {
        guard let c = current else { throw fail("unexpected end of input") }
        guard c == 92 else {  // '\'
            pos += 1
            return c
        }
        guard let e = peek(1) else { throw fail("unexpected end of input") }
        pos += 2
        switch e {
        case 120: return try hex(2)  // x
        case 117: return try hex(4)  // u
        case 85: return try hex(8)   // U
        case 116: return 9
        case 114: return 13
        case 110: return 10
        case 92, 34, 91, 93, 45: return e
        default: throw fail("unknown escape \\\(String(Unicode.Scalar(e).map(Character.init) ?? "?"))")
        }
    }

    mutating func hex(_ digits: Int) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let c = current, let d = Character(Unicode.Scalar(c)!).hexDigitValue else {
                throw fail("expected \(digits) hexadecimal digits")
            }
            value = value << 4 | UInt32(d)
            pos += 1
        }
        guard value <= 0x10FFFF else { throw fail("code point \(value) is beyond Unicode") }
        return value
    }

    mutating func parseSequence(rule: String, nested: Bool) throws -> [Grammar.Element] {
        var sequence: [Grammar.Element] = []
        // Where the last item starts: repetition applies to sequence[lastStart...].
        var lastStart: Int? = nil
        while let c = current {
            if c == 34 {  // '"' literal
                pos += 1
                lastStart = sequence.count
                while current != 34 {
                    guard current != nil else { throw fail("a string is not closed") }
                    sequence.append(.characters(.init(try escapedCharacter())))
                }
                pos += 1
            } else if c == 91 {  // '[' class
                pos += 1
                var negated = false
                if current == 94 { negated = true; pos += 1 }
                var ranges: [ClosedRange<UInt32>] = []
                while current != 93 {
                    guard current != nil else { throw fail("a character class is not closed") }
                    let low = try escapedCharacter()
                    var high = low
                    if current == 45, let next = peek(1), next != 93 {
                        pos += 1
                        high = try escapedCharacter()
                        guard high >= low else { throw fail("a character range runs backwards") }
                    }
                    ranges.append(low...high)
                }
                pos += 1
                lastStart = sequence.count
                sequence.append(.characters(.init(ranges, negated: negated)))
            } else if c == 46 {  // '.'
                pos += 1
                lastStart = sequence.count
                sequence.append(.characters(.any))
            } else if c == 60 || c == 33 {  // '<' or '!' token
                var negated = false
                if c == 33 { negated = true; pos += 1 }
                guard current == 60 else { throw fail("expected < after !") }
                pos += 1
                let id: Int32
                if current == 91 {
                    pos += 1
                    let n = try integer()
                    guard current == 93, peek(1) == 62 else { throw fail("expected ]> after a token id") }
                    pos += 2
                    id = Int32(n)
                } else {
                    let start = pos
                    while let d = current, d != 62 { pos += 1 }
                    guard current == 62 else { throw fail("a token is not closed with >") }
                    let text = String(String.UnicodeScalarView(self.text[start..<pos].compactMap(Unicode.Scalar.init)))
                    pos += 1
                    guard let token else { throw fail("<\(text)> needs the model's vocabulary") }
                    guard let found = token("<" + text + ">") else { throw fail("<\(text)> is not one token of this model") }
                    id = found
                }
                lastStart = sequence.count
                sequence.append(.token(id, negated: negated))
            } else if Self.isWordCharacter(c) {
                let referenced = try name()
                lastStart = sequence.count
                sequence.append(.rule(builder.reference(referenced)))
            } else if c == 40 {  // '('
                pos += 1
                skipSpace(newlines: true)
                let alternatives = try parseAlternatives(rule: rule, nested: true)
                guard current == 41 else { throw fail("expected )") }
                pos += 1
                lastStart = sequence.count
                sequence.append(.rule(builder.fresh(rule, alternatives)))
            } else if c == 42 || c == 43 || c == 63 || c == 123 {  // * + ? {
                guard let start = lastStart else { throw fail("nothing before the repetition") }
                var minimum = 0, maximum: Int? = nil
                pos += 1
                switch c {
                case 42: break
                case 43: minimum = 1
                case 63: maximum = 1
                default:
                    skipSpace(newlines: nested)
                    minimum = try integer()
                    skipSpace(newlines: nested)
                    if current == 125 {
                        maximum = minimum
                    } else if current == 44 {
                        pos += 1
                        skipSpace(newlines: nested)
                        if let d = current, d >= 48 && d <= 57 { maximum = try integer() }
                        skipSpace(newlines: nested)
                        guard current == 125 else { throw fail("expected }") }
                    } else {
                        throw fail("expected , or } in a repetition")
                    }
                    pos += 1
                    guard minimum <= 10_000, (maximum ?? 0) <= 10_000 else { throw fail("repetitions are limited to 10,000") }
                    if let maximum, maximum < minimum { throw fail("a repetition's maximum is below its minimum") }
                }
                let item = Array(sequence[start...])
                sequence.removeSubrange(start...)
                sequence += builder.repeated(item, minimum: minimum, maximum: maximum, name: rule)
                lastStart = nil
            } else {
                break
            }
            skipSpace(newlines: nested)
        }
        return sequence
    }
}
