import HearthCore

// JSON strings for `Grammar(jsonSchema:)`: the characters of a string as JSON writes them,
// lengths, the formats date, time, date-time, uuid and email, and `pattern` regular expressions.

/// A set of Unicode code points as sorted, disjoint, non-adjacent ranges.
struct CodePointSet: Hashable, Sendable {
    private(set) var ranges: [ClosedRange<UInt32>]

    static let maximum: UInt32 = 0x10FFFF
    static let all = CodePointSet([0...maximum])
    static let empty = CodePointSet([])
    static let ascii = CodePointSet([0...0x7F])
    /// What a JSON string must escape: the quote, the backslash and the control characters.
    static let escaped = CodePointSet([0...0x1F, 0x22...0x22, 0x5C...0x5C])

    init(_ ranges: [ClosedRange<UInt32>]) {
        var sorted = ranges.filter { $0.lowerBound <= Self.maximum }
            .map { $0.lowerBound...min($0.upperBound, Self.maximum) }
            .sorted { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<UInt32>] = []
        for r in sorted {
            if let last = merged.last, r.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        sorted = merged
        self.ranges = sorted
    }

    init(scalar: UInt32) { self.init([scalar...scalar]) }

    init(_ characters: String) { self.init(characters.unicodeScalars.map { $0.value...$0.value }) }

    var isEmpty: Bool { ranges.isEmpty }

    func contains(_ c: UInt32) -> Bool { ranges.contains { $0.contains(c) } }

    var inverted: CodePointSet {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in ranges {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = r.upperBound &+ 1
        }
        if next <= Self.maximum { out.append(next...Self.maximum) }
        return CodePointSet(out)
    }

    func union(_ other: CodePointSet) -> CodePointSet { CodePointSet(ranges + other.ranges) }
    func subtracting(_ other: CodePointSet) -> CodePointSet { intersection(other.inverted) }
    func intersection(_ other: CodePointSet) -> CodePointSet {
        var out: [ClosedRange<UInt32>] = []
        for a in ranges {
            for b in other.ranges where a.lowerBound <= b.upperBound && b.lowerBound <= a.upperBound {
                out.append(max(a.lowerBound, b.lowerBound)...min(a.upperBound, b.upperBound))
            }
        }
        return CodePointSet(out)
    }

    /// The grammar's class for the set: its ranges, or everything but its complement's when
    /// that is shorter.
    var characterClass: Grammar.CharacterClass {
        let complement = inverted
        // Surrogates are never characters, so a complement need not list them.
        let outside = complement.subtracting(CodePointSet([0xD800...0xDFFF]))
        if outside.ranges.count < ranges.count { return Grammar.CharacterClass(outside.ranges, negated: true) }
        return Grammar.CharacterClass(ranges)
    }
}

extension JSONSchemaCompiler {
    /// Elements matching `text` exactly.
    static func literal(_ text: String) -> [Grammar.Element] {
        text.unicodeScalars.map { .characters(Grammar.CharacterClass($0.value)) }
    }

    /// The element for one character of `set` inside a JSON string, written as JSON writes it:
    /// itself, or for the quote, the backslash and control characters an escape (`\"`, `\\`,
    /// `\b` `\f` `\n` `\r` `\t`, or `\u00XX` in either case). `\uXXXX` for other characters and
    /// `\/` are left out so that every string has one spelling (up to the case of hex digits):
    /// then a key that must differ from the declared properties, or a length, is a matter of
    /// characters, not of escapes. Nil when the set is empty.
    mutating func stringCharacter(_ set: CodePointSet) -> Grammar.Element? {
        if let known = characterRules[set] { return .rule(known) }
        var alternatives: [[Grammar.Element]] = []
        let plain = set.subtracting(.escaped)
        if !plain.isEmpty { alternatives.append([.characters(plain.characterClass)]) }
        let backslash = Grammar.Element.characters(Grammar.CharacterClass(0x5C))
        for (c, letter) in [(0x22, "\""), (0x5C, "\\"), (0x08, "b"), (0x0C, "f"), (0x0A, "n"), (0x0D, "r"), (0x09, "t")]
        where set.contains(UInt32(c)) {
            alternatives.append([backslash] + Self.literal(letter))
        }
        // \u00XX, grouped by the high digit: "\u00" [01] then the low digits in the set.
        for high in UInt32(0)...1 {
            var low: [ClosedRange<UInt32>] = []
            for nibble in UInt32(0)...15 where set.contains(high * 16 + nibble) {
                if nibble < 10 {
                    low.append((0x30 + nibble)...(0x30 + nibble))
                } else {
                    low.append((0x61 + nibble - 10)...(0x61 + nibble - 10))
                    low.append((0x41 + nibble - 10)...(0x41 + nibble - 10))
                }
            }
            guard !low.isEmpty else { continue }
            alternatives.append([backslash] + Self.literal("u00") + [.characters(Grammar.CharacterClass(0x30 + high)),
                                                                    .characters(Grammar.CharacterClass(low))])
        }
        guard !alternatives.isEmpty else { return nil }
        if alternatives.count == 1 && alternatives[0].count == 1 { return alternatives[0][0] }
        let r = builder.fresh("char", alternatives)
        characterRules[set] = r
        return .rule(r)
    }

    /// The elements of `text` inside a JSON string (quotes not included), escaped as
    /// `stringCharacter` writes them (hex digits in lower case).
    static func escapedContent(_ text: String) -> [Grammar.Element] {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0..<0x20: out += "\\u00" + String(scalar.value >> 4, radix: 16) + String(scalar.value & 15, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return literal(out)
    }

    /// A quoted JSON string literal.
    static func quotedLiteral(_ text: String) -> [Grammar.Element] {
        literal("\"") + escapedContent(text) + literal("\"")
    }

    /// A JSON string of any characters, between `minimum` and `maximum` of them.
    mutating func stringOfLength(minimum: Int, maximum: Int?) -> [Grammar.Element] {
        let char = stringCharacter(.all)!
        return Self.literal("\"") + builder.repeated([char], minimum: minimum, maximum: maximum, name: "string-chars") + Self.literal("\"")
    }

    /// The string schema at `schema`: format, pattern or lengths (together only when the format's or the
    /// pattern's own lengths already lie within the bounds).
    mutating func stringAlternatives(_ schema: SchemaObject) throws -> [[Grammar.Element]] {
        let minimum = try schema.count("minLength") ?? 0
        let maximum = try schema.count("maxLength")
        if let maximum, maximum < minimum {
            throw schema.error("maxLength \(maximum) is below minLength \(minimum), so no string is valid")
        }
        let format = try schema.string("format")
        let pattern = try schema.string("pattern")
        if format != nil && pattern != nil {
            throw schema.error("format and pattern together are not supported; keep one of them (a pattern can spell out the format)")
        }
        func checkLengths(_ own: (minimum: Int, maximum: Int?), _ what: String) throws {
            let inside = own.minimum >= minimum && (maximum == nil || (own.maximum.map { $0 <= maximum! } ?? false))
            guard inside || (minimum == 0 && maximum == nil) else {
                throw schema.error("minLength/maxLength together with \(what) are supported only when every string \(what) allows already has a length within them (\(own.minimum) to \(own.maximum.map(String.init) ?? "unbounded") characters here); write the bounds into the pattern instead, e.g. ^[a-z]{3,8}$")
            }
        }
        if let format {
            let content = try formatContent(format, schema)
            try checkLengths(content.lengths, "format \"\(format)\"")
            return [Self.literal("\"") + content.elements + Self.literal("\"")]
        }
        if let pattern {
            var parser = RegexParser(pattern: pattern, path: schema.path + "/pattern")
            let regex = try parser.parse()
            try checkLengths(regex.lengths, "the pattern")
            return [Self.literal("\"") + (try regexElements(regex)) + Self.literal("\"")]
        }
        return [stringOfLength(minimum: minimum, maximum: maximum)]
    }

    // MARK: Formats

    /// The characters of a string in `format`, and the lengths they can have.
    mutating func formatContent(_ format: String, _ schema: SchemaObject) throws -> (elements: [Grammar.Element], lengths: (minimum: Int, maximum: Int?)) {
        switch format {
        case "date": return ([.rule(dateRule())], (10, 10))
        case "time": return ([.rule(timeRule())], (9, 24))
        case "date-time": return ([.rule(dateRule())] + Self.literal("T") + [.rule(timeRule())], (20, 35))
        case "uuid":
            let hex = Grammar.Element.characters(Grammar.CharacterClass([0x30...0x39, 0x41...0x46, 0x61...0x66]))
            var elements: [Grammar.Element] = []
            for (i, count) in [8, 4, 4, 4, 12].enumerated() {
                if i > 0 { elements += Self.literal("-") }
                elements += Array(repeating: hex, count: count)
            }
            return ([.rule(shared("uuid", [elements]))], (36, 36))
        case "email":
            return ([.rule(emailRule())], (5, nil))
        default:
            throw schema.error("unsupported JSON Schema format \"\(format)\" at \(schema.path); supported formats are date, time, date-time, uuid and email (an approximation); describe others with pattern")
        }
    }

    /// A rule defined once under `name`.
    mutating func shared(_ name: String, _ alternatives: @autoclosure () -> [[Grammar.Element]]) -> Int {
        if builder.has(name) { return builder.reference(name) }
        let r = builder.reference(name)
        builder.define(name, alternatives())
        return r
    }

    static func digits(_ low: UInt8, _ high: UInt8) -> Grammar.Element {
        .characters(Grammar.CharacterClass([(0x30 + UInt32(low))...(0x30 + UInt32(high))]))
    }

    /// RFC 3339 full-date as Python's `date.fromisoformat` takes it: years 0001 to 9999, the days
    /// each month has, and February 29 in leap years only (every fourth year, but not centuries
    /// unless divisible by 400).
    mutating func dateRule() -> Int {
        if builder.has("date") { return builder.reference("date") }
        let d = Self.digits
        let any = d(0, 9)
        let year: [[Grammar.Element]] = [
            [d(1, 9), any, any, any],
            [d(0, 0), d(1, 9), any, any],
            [d(0, 0), d(0, 0), d(1, 9), any],
            [d(0, 0), d(0, 0), d(0, 0), d(1, 9)],
        ]
        // Two digits divisible by 4: an even tens digit with 0, 4 or 8; an odd one with 2 or 6.
        let even = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("02468").ranges))
        let odd = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("13579").ranges))
        let zeroFourEight = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("048").ranges))
        let twoSix = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("26").ranges))
        let fourEight = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("48").ranges))
        let evenNonZero = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("2468").ranges))
        let zero = d(0, 0)
        let leap: [[Grammar.Element]] = [
            // Not a century: any two digits, then a multiple of 4 other than 00.
            [any, any, even, fourEight], [any, any, evenNonZero, zero], [any, any, odd, twoSix],
            // Centuries divisible by 400, but not year 0000.
            [zero, fourEight, zero, zero], [evenNonZero, zeroFourEight, zero, zero], [odd, twoSix, zero, zero],
        ]
        let yearRule = builder.define("date-year", year)
        let leapRule = builder.define("date-leap-year", leap)
        let dash = Self.literal("-")
        let day28: [[Grammar.Element]] = [[d(0, 0), d(1, 9)], [d(1, 1), any], [d(2, 2), d(0, 8)]]
        let day30 = day28 + [[d(2, 2), d(9, 9)], [d(3, 3), d(0, 0)]]
        let day31 = day30 + [[d(3, 3), d(1, 1)]]
        let d28 = builder.define("date-day-28", day28), d30 = builder.define("date-day-30", day30)
        let d31 = builder.define("date-day-31", day31)
        var monthDay: [[Grammar.Element]] = []
        for month in ["01", "03", "05", "07", "08", "10", "12"] { monthDay.append(Self.literal(month) + dash + [.rule(d31)]) }
        for month in ["04", "06", "09", "11"] { monthDay.append(Self.literal(month) + dash + [.rule(d30)]) }
        monthDay.append(Self.literal("02") + dash + [.rule(d28)])
        let monthDayRule = builder.define("date-month-day", monthDay)
        return builder.define("date", [
            [.rule(yearRule)] + dash + [.rule(monthDayRule)],
            [.rule(leapRule)] + Self.literal("-02-29"),
        ])
    }

    /// RFC 3339 full-time: hours 00-23, minutes and seconds 00-59 (no leap second), up to nine
    /// digits of fraction, and Z or an offset.
    mutating func timeRule() -> Int {
        if builder.has("time") { return builder.reference("time") }
        let d = Self.digits
        let hour = builder.define("time-hour", [[d(0, 1), d(0, 9)], [d(2, 2), d(0, 3)]])
        let sixty: [Grammar.Element] = [d(0, 5), d(0, 9)]
        let fraction = builder.repeated(Self.literal(".") + builder.repeated([d(0, 9)], minimum: 1, maximum: 9, name: "time-fraction"),
                                        minimum: 0, maximum: 1, name: "time-fraction")
        let offset = builder.define("time-offset", [
            Self.literal("Z"),
            [.characters(Grammar.CharacterClass(CodePointSet("+-").ranges)), .rule(hour)] + Self.literal(":") + sixty,
        ])
        return builder.define("time", [[.rule(hour)] + Self.literal(":") + sixty + Self.literal(":") + sixty + fraction + [.rule(offset)]])
    }

    /// A plain address: a dot-atom local part (letters, digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~,
    /// dots between them) of up to 64 of those characters, at a host of two to four labels of
    /// letters, digits and inner hyphens, up to 63 characters each (RFC 5321's limits). An
    /// approximation: quoted local parts and address literals are left out; the bounds keep a
    /// sampled address from running on.
    mutating func emailRule() -> Int {
        if builder.has("email") { return builder.reference("email") }
        let atom = Grammar.Element.characters(Grammar.CharacterClass(
            CodePointSet("!#$%&'*+-/=?^_`{|}~").union(CodePointSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A])).ranges))
        let alnum = Grammar.Element.characters(Grammar.CharacterClass([0x30...0x39, 0x41...0x5A, 0x61...0x7A]))
        let hyphenated = Grammar.Element.characters(Grammar.CharacterClass([0x2D...0x2D, 0x30...0x39, 0x41...0x5A, 0x61...0x7A]))
        // Each further character may follow a dot: never two dots, none first or last.
        let dotted = builder.define("email-dotted", [[atom], Self.literal(".") + [atom]])
        let local = [atom] + builder.repeated([.rule(dotted)], minimum: 0, maximum: 63, name: "email-local")
        let label = builder.define("email-label", [[alnum] + builder.repeated(builder.repeated([hyphenated], minimum: 0, maximum: 61, name: "email-label") + [alnum],
                                                                              minimum: 0, maximum: 1, name: "email-label")])
        let host = [Grammar.Element.rule(label)] + builder.repeated(Self.literal(".") + [.rule(label)], minimum: 1, maximum: 3, name: "email-host")
        return builder.define("email", [local + Self.literal("@") + host])
    }

    // MARK: Patterns

    /// The elements of a string's characters matching `regex`.
    mutating func regexElements(_ regex: RegexParser.Pattern) throws -> [Grammar.Element] {
        var branches: [[Grammar.Element]] = []
        for branch in regex.branches {
            var elements: [Grammar.Element] = []
            // An unanchored side matches anything before or after (JSON Schema patterns search).
            if !branch.anchoredStart { elements += builder.repeated([stringCharacter(.all)!], minimum: 0, maximum: nil, name: "pattern-any") }
            guard let body = try regexNode(branch.node) else { continue }
            elements += body
            if !branch.anchoredEnd { elements += builder.repeated([stringCharacter(.all)!], minimum: 0, maximum: nil, name: "pattern-any") }
            branches.append(elements)
        }
        guard !branches.isEmpty else { throw HearthError.invalidArgument("The pattern at \(regex.path) matches no string.") }
        return branches.count == 1 ? branches[0] : [.rule(builder.fresh("pattern", branches))]
    }

    /// Nil when the node matches nothing (an empty class).
    mutating func regexNode(_ node: RegexParser.Node) throws -> [Grammar.Element]? {
        switch node {
        case .set(let set):
            return stringCharacter(set).map { [$0] }
        case .sequence(let items):
            var out: [Grammar.Element] = []
            for item in items {
                guard let elements = try regexNode(item) else { return nil }
                out += elements
            }
            return out
        case .choice(let options):
            var alternatives: [[Grammar.Element]] = []
            for option in options { if let elements = try regexNode(option) { alternatives.append(elements) } }
            if alternatives.isEmpty { return nil }
            if alternatives.count == 1 { return alternatives[0] }
            return [.rule(builder.fresh("pattern-group", alternatives))]
        case .repeated(let item, let minimum, let maximum):
            guard let elements = try regexNode(item) else { return minimum == 0 ? [] : nil }
            if maximum == 0 { return [] }
            return builder.repeated(elements, minimum: minimum, maximum: maximum, name: "pattern-repeat")
        }
    }
}

/// The subset of regular expressions `pattern` compiles: literals, classes (ranges, negation,
/// `\d \w \s \D \W \S`), `.`, groups (plain, `(?:…)`, named), alternation, `* + ? {m} {m,}
/// {m,n}` (lazy forms too: they match the same strings), escapes, and `^`/`$` at the ends of
/// the top-level alternatives. Lookarounds, backreferences, word boundaries, inline flags and
/// Unicode property classes are refused by name.
///
/// Engines disagree outside ASCII (Python's `\d` takes every Unicode digit, ECMA-262's only
/// 0-9), so each class is kept as what it surely matches: `\d`, `\w`, `\s` match their ASCII
/// members, and their negations (`\D`, `[^\d]`) ASCII characters only. `.` leaves out both
/// engines' line ends (\n, \r, U+2028, U+2029). A pattern's strings are then valid for either.
struct RegexParser {
    indirect enum Node {
        case set(CodePointSet)
        case sequence([Node])
        case choice([Node])
        case repeated(Node, minimum: Int, maximum: Int?)

        /// The fewest and most characters the node matches (nil: unbounded).
        var lengths: (minimum: Int, maximum: Int?) {
            switch self {
            case .set(let s): return s.isEmpty ? (0, 0) : (1, 1)
            case .sequence(let items):
                var low = 0, high: Int? = 0
                for item in items {
                    let l = item.lengths
                    low += l.minimum
                    high = high.flatMap { h in l.maximum.map { h + $0 } }
                }
                return (low, high)
            case .choice(let options):
                let all = options.map(\.lengths)
                let high: Int? = all.contains { $0.maximum == nil } ? nil : all.compactMap(\.maximum).max() ?? 0
                return (all.map(\.minimum).min() ?? 0, high)
            case .repeated(let item, let minimum, let maximum):
                let l = item.lengths
                let high: Int? = maximum.flatMap { m in l.maximum.map { $0 * m } }
                return (l.minimum * minimum, high)
            }
        }
    }

    struct Branch {
        var anchoredStart: Bool
        var anchoredEnd: Bool
        var node: Node
    }

    struct Pattern {
        var branches: [Branch]
        var path: String

        var lengths: (minimum: Int, maximum: Int?) {
            let all = branches.map { b -> (minimum: Int, maximum: Int?) in
                let l = b.node.lengths
                return (l.minimum, b.anchoredStart && b.anchoredEnd ? l.maximum : nil)
            }
            let high: Int? = all.contains { $0.maximum == nil } ? nil : all.compactMap(\.maximum).max() ?? 0
            return (all.map(\.minimum).min() ?? 0, high)
        }
    }

    /// A class as what it surely matches (`lower`) and what it may match (`upper`); see above.
    struct Bounds {
        var lower: CodePointSet
        var upper: CodePointSet

        init(_ exact: CodePointSet) { lower = exact; upper = exact }
        init(lower: CodePointSet, upper: CodePointSet) { self.lower = lower; self.upper = upper }

        func union(_ other: Bounds) -> Bounds { Bounds(lower: lower.union(other.lower), upper: upper.union(other.upper)) }
        var inverted: Bounds { Bounds(lower: upper.inverted, upper: lower.inverted) }

        static let nonASCII = CodePointSet([0x80...CodePointSet.maximum])
        static let digit = Bounds(lower: CodePointSet([0x30...0x39]), upper: CodePointSet([0x30...0x39]).union(nonASCII))
        static let word = Bounds(lower: CodePointSet([0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]),
                                 upper: CodePointSet([0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]).union(nonASCII))
        // Python's \s also takes 0x1C-0x1F; ECMA-262's takes U+00A0, U+FEFF and others.
        static let space = Bounds(lower: CodePointSet([0x09...0x0D, 0x20...0x20]),
                                  upper: CodePointSet([0x09...0x0D, 0x1C...0x20]).union(nonASCII))
    }

    let text: [UInt32]
    let path: String
    var pos = 0

    init(pattern: String, path: String) {
        text = pattern.unicodeScalars.map(\.value)
        self.path = path
    }

    func fail(_ message: String) -> HearthError {
        let pattern = String(String.UnicodeScalarView(text.compactMap(Unicode.Scalar.init)))
        return .invalidArgument("The pattern \(pattern.debugDescription) at \(path): \(message) (at character \(pos + 1)).")
    }

    func refuse(_ construct: String) -> HearthError {
        let pattern = String(String.UnicodeScalarView(text.compactMap(Unicode.Scalar.init)))
        return .invalidArgument("unsupported regular expression feature in the pattern \(pattern.debugDescription) at \(path): \(construct) (at character \(pos + 1)); a grammar can only match what the string itself holds: rewrite the pattern without it.")
    }

    var current: UInt32? { pos < text.count ? text[pos] : nil }
    func peek(_ k: Int) -> UInt32? { pos + k < text.count ? text[pos + k] : nil }

    mutating func parse() throws -> Pattern {
        var branches: [Branch] = []
        while true {
            var start = false
            if current == 0x5E { start = true; pos += 1 }  // ^
            var items: [Node] = []
            var end = false
            while let c = current, c != 0x7C {  // |
                if c == 0x24 {  // $
                    pos += 1
                    guard current == nil || current == 0x7C else { throw refuse("$ before the end of the pattern") }
                    end = true
                    break
                }
                if c == 0x29 { throw fail("unbalanced )") }
                items.append(try quantified())
            }
            branches.append(Branch(anchoredStart: start, anchoredEnd: end, node: .sequence(items)))
            guard current == 0x7C else { break }
            pos += 1
        }
        return Pattern(branches: branches, path: path)
    }

    mutating func alternation() throws -> Node {
        var options: [Node] = []
        while true {
            var items: [Node] = []
            while let c = current, c != 0x7C, c != 0x29 { items.append(try quantified()) }
            options.append(.sequence(items))
            guard current == 0x7C else { break }
            pos += 1
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    mutating func quantified() throws -> Node {
        var node = try atom()
        while let c = current {
            var minimum = 0, maximum: Int? = nil
            if c == 0x2A { pos += 1 }  // *
            else if c == 0x2B { minimum = 1; pos += 1 }  // +
            else if c == 0x3F { maximum = 1; pos += 1 }  // ?
            else if c == 0x7B, let counts = braces() {  // {
                minimum = counts.minimum
                maximum = counts.maximum
                pos += counts.length
            } else {
                break
            }
            if let maximum, maximum < minimum { throw fail("a repetition's maximum is below its minimum") }
            guard minimum <= 10_000, (maximum ?? 0) <= 10_000 else { throw fail("repetitions are limited to 10,000") }
            if current == 0x3F { pos += 1 }  // lazy: the same strings
            else if current == 0x2B { throw refuse("a possessive quantifier") }
            if case .repeated = node { throw fail("a repetition of a repetition; put the inner one in a group") }
            node = .repeated(node, minimum: minimum, maximum: maximum)
        }
        return node
    }

    /// `{m}`, `{m,}`, `{m,n}` or `{,n}` at the current position: the bounds and the length;
    /// nil when the brace is a literal (as both engines read one that is no quantifier).
    func braces() -> (minimum: Int, maximum: Int?, length: Int)? {
        var i = pos + 1
        func number() -> Int? {
            let start = i
            var value = 0
            while i < text.count, (0x30...0x39).contains(text[i]) {
                value = min(value * 10 + Int(text[i] - 0x30), 1_000_000)
                i += 1
            }
            return i > start ? value : nil
        }
        let low = number()
        if i < text.count, text[i] == 0x7D {
            guard let low else { return nil }
            return (low, low, i + 1 - pos)
        }
        guard i < text.count, text[i] == 0x2C else { return nil }
        i += 1
        let high = number()
        guard i < text.count, text[i] == 0x7D, low != nil || high != nil else { return nil }
        return (low ?? 0, high, i + 1 - pos)
    }

    mutating func atom() throws -> Node {
        guard let c = current else { throw fail("unexpected end") }
        switch c {
        case 0x28:  // (
            pos += 1
            if current == 0x3F {  // ?
                switch peek(1) ?? 0 {
                case 0x3A: pos += 2  // (?:
                case 0x3D: throw refuse("a lookahead (?=…)")
                case 0x21: throw refuse("a negative lookahead (?!…)")
                case 0x3C where peek(2) == 0x3D: throw refuse("a lookbehind (?<=…)")
                case 0x3C where peek(2) == 0x21: throw refuse("a negative lookbehind (?<!…)")
                case 0x3C: try skipGroupName(from: pos + 2)  // (?<name>
                case 0x50 where peek(2) == 0x3C: try skipGroupName(from: pos + 3)  // (?P<name>
                case 0x50 where peek(2) == 0x3D: throw refuse("a named backreference (?P=…)")
                case 0x3E: throw refuse("an atomic group (?>…)")
                case 0x23: throw refuse("a comment group (?#…)")
                default: throw refuse("inline flags or another (?…) group")
                }
            }
            let inner = try alternation()
            guard current == 0x29 else { throw fail("a group is not closed") }
            pos += 1
            return inner
        case 0x5B:  // [
            return .set(try characterClass().lower)
        case 0x2E:  // .
            pos += 1
            return .set(CodePointSet.all.subtracting(CodePointSet([0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029])))
        case 0x5C:  // \
            return .set(try escape(inClass: false).lower)
        case 0x5E: throw refuse("^ after the start of the pattern")
        case 0x24: throw refuse("$ before the end of the pattern")
        case 0x2A, 0x2B, 0x3F: throw fail("nothing to repeat")
        case 0x7B where braces() != nil: throw fail("nothing to repeat")
        default:
            pos += 1
            return .set(CodePointSet(scalar: c))
        }
    }

    mutating func skipGroupName(from start: Int) throws {
        var i = start
        while i < text.count, text[i] != 0x3E { i += 1 }
        guard i < text.count, i > start else { throw fail("a group name is not closed with >") }
        pos = i + 1
    }

    mutating func characterClass() throws -> Bounds {
        pos += 1
        var negated = false
        if current == 0x5E { negated = true; pos += 1 }
        if current == 0x5D {
            throw refuse("] first in a class (Python reads it as a literal, ECMA-262 as an empty class); escape it as \\]")
        }
        var members = Bounds(.empty)
        while current != 0x5D {
            guard current != nil else { throw fail("a character class is not closed") }
            let low = try classAtom()
            if current == 0x2D, let next = peek(1), next != 0x5D {  // a range
                pos += 1
                let high = try classAtom()
                guard let a = low.single, let b = high.single else { throw fail("a range with a class at one end") }
                guard a <= b else { throw fail("a range runs backwards") }
                members = members.union(Bounds(CodePointSet([a...b])))
            } else {
                members = members.union(low.bounds)
            }
        }
        pos += 1
        return negated ? members.inverted : members
    }

    /// One member of a class: a character (`single`) or a shorthand class.
    mutating func classAtom() throws -> (single: UInt32?, bounds: Bounds) {
        guard let c = current else { throw fail("a character class is not closed") }
        if c == 0x5C {
            let bounds = try escape(inClass: true)
            if bounds.lower == bounds.upper, bounds.lower.ranges.count == 1, bounds.lower.ranges[0].count == 1 {
                return (bounds.lower.ranges[0].lowerBound, bounds)
            }
            return (nil, bounds)
        }
        pos += 1
        return (c, Bounds(CodePointSet(scalar: c)))
    }

    mutating func escape(inClass: Bool) throws -> Bounds {
        pos += 1
        guard let e = current else { throw fail("a trailing backslash") }
        pos += 1
        func one(_ c: UInt32) -> Bounds { Bounds(CodePointSet(scalar: c)) }
        switch e {
        case 0x64: return .digit  // d
        case 0x44: return Bounds.digit.inverted  // D
        case 0x77: return .word  // w
        case 0x57: return Bounds.word.inverted  // W
        case 0x73: return .space  // s
        case 0x53: return Bounds.space.inverted  // S
        case 0x6E: return one(0x0A)
        case 0x74: return one(0x09)
        case 0x72: return one(0x0D)
        case 0x66: return one(0x0C)
        case 0x76: return one(0x0B)
        case 0x62 where inClass: return one(0x08)
        case 0x62, 0x42: pos -= 2; throw refuse("a word boundary \\\(e == 0x62 ? "b" : "B")")
        case 0x78: return one(try hex(2))  // x
        case 0x75:  // u
            if current == 0x7B { pos -= 2; throw refuse("\\u{…} (use \\uXXXX)") }
            return one(try hex(4))
        case 0x30 where !(current.map { (0x30...0x39).contains($0) } ?? false): return one(0)
        case 0x31...0x39: pos -= 2; throw refuse("a backreference \\\(e - 0x30)")
        case 0x6B: pos -= 2; throw refuse("a named backreference \\k<…>")
        case 0x70, 0x50: pos -= 2; throw refuse("a Unicode property class \\\(e == 0x70 ? "p" : "P"){…}")
        case 0x41, 0x5A, 0x7A, 0x47: pos -= 2; throw refuse("an anchor \\\(Character(Unicode.Scalar(e)!))")
        default:
            // Escaped punctuation is itself; an escaped letter or digit means something else.
            if let scalar = Unicode.Scalar(e), scalar.properties.isAlphabetic || (0x30...0x39).contains(e) {
                pos -= 2
                throw refuse("the escape \\\(Character(scalar))")
            }
            return one(e)
        }
    }

    mutating func hex(_ count: Int) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let c = current, let d = Character(Unicode.Scalar(c)!).hexDigitValue else { throw fail("expected \(count) hexadecimal digits") }
            value = value << 4 | UInt32(d)
            pos += 1
        }
        return value
    }
}
