import HearthCore

/// A context-free grammar over Unicode code points (and, for special tokens, token ids): what
/// GBNF files and JSON schemas compile to, and what `GrammarState` recognizes.
///
/// Each rule has alternatives; each alternative is a sequence of elements. Repetition and
/// optional parts are rules of their own, written by `GrammarBuilder` (a repeated `x*` is
/// `r ::= x r | ε`, right-recursive), so the recognizer only knows sequences and choices.
public struct Grammar: Sendable, Hashable, Codable {
    /// A set of code points: ranges, or everything but them.
    public struct CharacterClass: Sendable, Hashable, Codable {
        public var ranges: [ClosedRange<UInt32>]
        public var negated: Bool

        public init(_ ranges: [ClosedRange<UInt32>], negated: Bool = false) {
            self.ranges = ranges
            self.negated = negated
        }

        /// One code point.
        public init(_ scalar: UInt32) { self.init([scalar...scalar]) }

        /// Any code point.
        public static let any = CharacterClass([], negated: true)

        public func matches(_ c: UInt32) -> Bool {
            var inside = false
            for r in ranges where r.contains(c) {
                inside = true
                break
            }
            return inside != negated
        }

        /// Whether some code point in `low...high` matches.
        public func intersects(_ low: UInt32, _ high: UInt32) -> Bool {
            if !negated { return ranges.contains { $0.lowerBound <= high && $0.upperBound >= low } }
            // Everything but the ranges: some point of low...high is outside all of them.
            var next = low
            for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where r.upperBound >= next {
                if r.lowerBound > next { return true }
                if r.upperBound >= high { return false }
                next = r.upperBound + 1
            }
            return next <= high
        }
    }

    /// One element of a sequence.
    public enum Element: Sendable, Hashable, Codable {
        /// One code point of the class.
        case characters(CharacterClass)
        /// The rule with this index.
        case rule(Int)
        /// One whole token with this id, or (negated) any token but it.
        case token(Int32, negated: Bool)
    }

    public struct Rule: Sendable, Hashable, Codable {
        public var name: String
        public var alternatives: [[Element]]

        public init(name: String, alternatives: [[Element]]) {
            self.name = name
            self.alternatives = alternatives
        }
    }

    public var rules: [Rule]
    /// The rule the whole output must match.
    public var root: Int

    /// Checks that every reference names a rule and that no rule refers to itself before
    /// matching anything (left recursion, which a top-down recognizer cannot run).
    public init(rules: [Rule], root: Int) throws {
        self.rules = rules
        self.root = root
        guard rules.indices.contains(root) else { throw HearthError.invalidArgument("The grammar has no root rule.") }
        for rule in rules {
            for alternative in rule.alternatives {
                for case .rule(let r) in alternative where !rules.indices.contains(r) {
                    throw HearthError.invalidArgument("Rule \(rule.name) refers to a rule that does not exist.")
                }
            }
        }
        try checkLeftRecursion()
    }

    /// Which rules can match the empty string.
    public func nullableRules() -> [Bool] {
        var nullable = [Bool](repeating: false, count: rules.count)
        var changed = true
        while changed {
            changed = false
            for (i, rule) in rules.enumerated() where !nullable[i] {
                let empty = rule.alternatives.contains { alternative in
                    alternative.allSatisfy { if case .rule(let r) = $0 { return nullable[r] } else { return false } }
                }
                if empty {
                    nullable[i] = true
                    changed = true
                }
            }
        }
        return nullable
    }

    /// A length no derivation reaches: a rule that matches nothing finite.
    public static let unreachableLength = Int.max / 4

    /// The fewest UTF-8 bytes one code point of `cls` takes (`unreachableLength` when it matches none).
    public static func minimumBytes(of cls: CharacterClass) -> Int {
        var lowest: UInt32
        if !cls.negated {
            guard let low = cls.ranges.map(\.lowerBound).min() else { return unreachableLength }
            lowest = low
        } else {
            // The first code point outside every range.
            lowest = 0
            for r in cls.ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where r.upperBound >= lowest {
                if r.lowerBound > lowest { break }
                guard r.upperBound < 0x10FFFF else { return unreachableLength }
                lowest = r.upperBound + 1
            }
        }
        switch lowest {
        case 0..<0x80: return 1
        case 0x80..<0x800: return 2
        case 0x800..<0x10000: return 3
        default: return 4
        }
    }

    /// The fewest tokens one code point of `cls` takes when it is written one byte a token, with
    /// only the bytes `single` marks having a token of their own (`unreachableLength` when no
    /// code point of it can be written so). Code points of four bytes are tried at the ends of
    /// the class's ranges only.
    public static func minimumTokens(of cls: CharacterClass, single: [Bool]) -> Int {
        func writable(_ c: UInt32) -> Bool {
            guard cls.matches(c), let scalar = Unicode.Scalar(c) else { return false }
            return String(scalar).utf8.allSatisfy { single[Int($0)] }
        }
        if (0..<0x80).contains(where: writable) { return 1 }
        if (0x80..<0x800).contains(where: writable) { return 2 }
        if (0x800..<0x10000).contains(where: writable) { return 3 }
        let ends: [UInt32] = cls.ranges.flatMap { [$0.lowerBound, $0.upperBound, $0.upperBound &+ 1] } + [0x10000, 0x10FFFF]
        return ends.contains { (UInt32(0x10000)...0x10FFFF).contains($0) && writable($0) } ? 4 : unreachableLength
    }

    /// The fewest units (bytes, or tokens with `cost` from `minimumTokens`) each element
    /// takes, given the rules' minimum lengths (a token element counts one: it is one token,
    /// whatever its text).
    static func minimumLength(of element: Element, rules minimum: [Int], cost: (CharacterClass) -> Int) -> Int {
        switch element {
        case .characters(let cls): return cost(cls)
        case .rule(let r): return minimum[r]
        case .token: return 1
        }
    }

    /// Each rule's shortest derivation, in UTF-8 bytes unless `cost` counts a character class
    /// otherwise: a fixpoint over the alternatives, from "unreachable" down (a recursive rule
    /// takes its shortest way out).
    public func minimumLengths(cost: (CharacterClass) -> Int = Grammar.minimumBytes(of:)) -> [Int] {
        var minimum = [Int](repeating: Self.unreachableLength, count: rules.count)
        var changed = true
        while changed {
            changed = false
            for (i, rule) in rules.enumerated() {
                for alternative in rule.alternatives {
                    var total = 0
                    for element in alternative {
                        total = min(Self.unreachableLength, total + Self.minimumLength(of: element, rules: minimum, cost: cost))
                    }
                    if total < minimum[i] {
                        minimum[i] = total
                        changed = true
                    }
                }
            }
        }
        return minimum
    }

    private func checkLeftRecursion() throws {
        let nullable = nullableRules()
        // Rules each rule can start with (through a nullable prefix).
        let starts: [[Int]] = rules.map { rule in
            var found: [Int] = []
            for alternative in rule.alternatives {
                for element in alternative {
                    guard case .rule(let r) = element else { break }
                    found.append(r)
                    if !nullable[r] { break }
                }
            }
            return found
        }
        // A cycle in the "starts with" graph is left recursion.
        var state = [UInt8](repeating: 0, count: rules.count)  // 0 new, 1 on the path, 2 done
        func visit(_ r: Int) throws {
            state[r] = 1
            for s in starts[r] {
                if state[s] == 1 {
                    throw HearthError.invalidArgument("Rule \(rules[s].name) is left-recursive (it can refer to itself before matching anything); rewrite it with repetition, e.g. x ::= y (\"+\" y)*.")
                }
                if state[s] == 0 { try visit(s) }
            }
            state[r] = 2
        }
        for r in rules.indices where state[r] == 0 { try visit(r) }
    }
}

/// Builds a `Grammar` rule by rule, with helpers for the rules repetition needs.
public struct GrammarBuilder {
    public private(set) var rules: [Grammar.Rule] = []
    private var index: [String: Int] = [:]

    public init() {}

    /// The index of the rule called `name`, declaring it (with no alternatives yet) if new.
    public mutating func reference(_ name: String) -> Int {
        if let i = index[name] { return i }
        rules.append(Grammar.Rule(name: name, alternatives: []))
        index[name] = rules.count - 1
        return rules.count - 1
    }

    /// Whether `name` is declared.
    public func has(_ name: String) -> Bool { index[name] != nil }

    /// Sets the alternatives of the rule called `name` and returns its index.
    @discardableResult
    public mutating func define(_ name: String, _ alternatives: [[Grammar.Element]]) -> Int {
        let i = reference(name)
        rules[i].alternatives = alternatives
        return i
    }

    /// The alternatives of rule `i`.
    public func alternatives(of i: Int) -> [[Grammar.Element]] { rules[i].alternatives }

    /// A new rule with a name derived from `base`, defined as `alternatives`.
    public mutating func fresh(_ base: String, _ alternatives: [[Grammar.Element]]) -> Int {
        var n = rules.count
        while index["\(base)-\(n)"] != nil { n += 1 }
        return define("\(base)-\(n)", alternatives)
    }

    /// `sequence` repeated between `minimum` and `maximum` (nil: no limit) times, as elements:
    /// the required copies in line, then a chain of optional ones or a right-recursive rule.
    public mutating func repeated(_ sequence: [Grammar.Element], minimum: Int, maximum: Int?, name: String) -> [Grammar.Element] {
        var result: [Grammar.Element] = []
        // A sequence of several elements is one rule, so that it repeats as a whole.
        let item: [Grammar.Element] = sequence.count == 1 ? sequence : [.rule(fresh(name, [sequence]))]
        for _ in 0..<minimum { result += item }
        if let maximum {
            guard maximum > minimum else { return result }
            // x{0,n} as (x (x (…)?)?)?: each optional copy only after the one before.
            var inner: Int? = nil
            for _ in 0..<(maximum - minimum) {
                let body: [Grammar.Element] = inner.map { item + [.rule($0)] } ?? item
                inner = fresh(name, [body, []])
            }
            result.append(.rule(inner!))
        } else {
            let r = reference("\(name)-star-\(rules.count)")
            rules[r].alternatives = [item + [.rule(r)], []]
            result.append(.rule(r))
        }
        return result
    }

    /// Copies every rule of `grammar` in (renamed under `prefix`) and returns the index its root
    /// rule has here, to be referred to as `.rule(index)`.
    public mutating func include(_ grammar: Grammar, prefix: String) -> Int {
        let base = rules.count
        for rule in grammar.rules {
            let name = "\(prefix)-\(rule.name)"
            let alternatives = rule.alternatives.map { sequence in
                sequence.map { element -> Grammar.Element in
                    if case .rule(let r) = element { return .rule(base + r) }
                    return element
                }
            }
            var unique = name
            while index[unique] != nil { unique += "-" }
            rules.append(Grammar.Rule(name: unique, alternatives: alternatives))
            index[unique] = rules.count - 1
        }
        return base + grammar.root
    }

    /// Elements matching `text` exactly.
    public static func literal(_ text: String) -> [Grammar.Element] {
        text.unicodeScalars.map { .characters(.init($0.value)) }
    }

    /// The grammar with `root` as its root rule.
    public func build(root: String) throws -> Grammar {
        guard let r = index[root] else { throw HearthError.invalidArgument("The grammar has no rule called \(root).") }
        for rule in rules where rule.alternatives.isEmpty {
            throw HearthError.invalidArgument("Rule \(rule.name) is used but never defined.")
        }
        return try Grammar(rules: rules, root: r)
    }
}
