import Foundation

// Numbers for `Grammar(jsonSchema:)`: integers between bounds as grammars over their digits,
// and decimals between bounds compared digit by digit.

/// A decimal number as its digits: `integer` without leading zeros ([0] for zero) and
/// `fraction` without trailing zeros.
struct DecimalDigits: Hashable, Comparable {
    var negative: Bool
    var integer: [UInt8]
    var fraction: [UInt8]

    init(negative: Bool, integer: [UInt8], fraction: [UInt8] = []) {
        var integer = Array(integer.drop { $0 == 0 })
        if integer.isEmpty { integer = [0] }
        var fraction = fraction
        while fraction.last == 0 { fraction.removeLast() }
        self.integer = integer
        self.fraction = fraction
        self.negative = negative && !(integer == [0] && fraction.isEmpty)
    }

    /// The digits of decimal text such as "-12.50" or "1e+20".
    init?(text: String) {
        var s = Substring(text)
        let negative = s.first == "-"
        if negative || s.first == "+" { s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let x = Int(s[s.index(after: e)...]) else { return nil }
            exponent = x
            s = s[..<e]
        }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first else { return nil }
        let fractionText = parts.count == 2 ? parts[1] : ""
        var digits: [UInt8] = []
        for c in Array(whole.utf8) + Array(fractionText.utf8) {
            guard (0x30...0x39).contains(c) else { return nil }
            digits.append(c - 0x30)
        }
        guard !digits.isEmpty, abs(exponent) < 400 else { return nil }
        // The decimal point sits after whole.count digits, moved by the exponent.
        var point = whole.utf8.count + exponent
        if point < 0 {
            digits.insert(contentsOf: repeatElement(0, count: -point), at: 0)
            point = 0
        }
        if point > digits.count { digits += repeatElement(0, count: point - digits.count) }
        self.init(negative: negative, integer: Array(digits[..<point]), fraction: Array(digits[point...]))
    }

    /// A double as its shortest round-tripping decimal (what JSON parsers compare against).
    init(shortest value: Double) {
        self.init(text: "\(value)")!
    }

    /// A double's exact binary value, rounded to an integer towards minus infinity (`floor`) or plus infinity.
    static func integer(_ value: Double, roundingUp: Bool) -> DecimalDigits {
        let rounded = roundingUp ? value.rounded(.up) : value.rounded(.down)
        // %.0f prints a whole double's exact value.
        return DecimalDigits(text: String(format: "%.0f", rounded))!
    }

    var isZero: Bool { integer == [0] && fraction.isEmpty }

    /// Compares magnitudes.
    static func compareMagnitude(_ a: DecimalDigits, _ b: DecimalDigits) -> Int {
        if a.integer.count != b.integer.count { return a.integer.count < b.integer.count ? -1 : 1 }
        for (x, y) in zip(a.integer, b.integer) where x != y { return x < y ? -1 : 1 }
        for i in 0..<max(a.fraction.count, b.fraction.count) {
            let x = i < a.fraction.count ? a.fraction[i] : 0, y = i < b.fraction.count ? b.fraction[i] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        return 0
    }

    static func < (a: DecimalDigits, b: DecimalDigits) -> Bool {
        switch (a.negative, b.negative) {
        case (true, false): return true
        case (false, true): return false
        case (false, false): return compareMagnitude(a, b) < 0
        case (true, true): return compareMagnitude(a, b) > 0
        }
    }

    var magnitude: DecimalDigits { DecimalDigits(negative: false, integer: integer, fraction: fraction) }
    var negated: DecimalDigits { DecimalDigits(negative: !negative, integer: integer, fraction: fraction) }

    /// The integer one above (for integers).
    var successor: DecimalDigits {
        if negative { return DecimalDigits(negative: true, integer: Self.subtractOne(integer)) }
        return DecimalDigits(negative: false, integer: Self.addOne(integer))
    }

    /// The integer one below (for integers).
    var predecessor: DecimalDigits {
        if negative || isZero { return DecimalDigits(negative: true, integer: Self.addOne(integer)) }
        return DecimalDigits(negative: false, integer: Self.subtractOne(integer))
    }

    static func addOne(_ digits: [UInt8]) -> [UInt8] {
        var d = digits
        var i = d.count - 1
        while i >= 0 {
            if d[i] < 9 { d[i] += 1; return d }
            d[i] = 0
            i -= 1
        }
        return [1] + d
    }

    static func subtractOne(_ digits: [UInt8]) -> [UInt8] {
        var d = digits
        var i = d.count - 1
        while i >= 0 {
            if d[i] > 0 { d[i] -= 1; break }
            d[i] = 9
            i -= 1
        }
        return Array(d.drop { $0 == 0 }).isEmpty ? [0] : Array(d.drop { $0 == 0 })
    }

    var text: String {
        (negative ? "-" : "") + integer.map(String.init).joined() + (fraction.isEmpty ? "" : "." + fraction.map(String.init).joined())
    }
}

/// A bound on a number: its value and whether the value itself is excluded.
struct NumberBound {
    var value: DecimalDigits
    var exclusive: Bool
}

extension JSONSchemaCompiler {
    /// Significant digits a bounded decimal may have: with at most 15, distinct decimals are
    /// distinct doubles in the same order, so comparing digits agrees with a JSON parser that
    /// reads the document and the bound as doubles (Python's `jsonschema` does).
    static let boundedDecimalDigits = 15

    /// The lower and upper bound the schema sets (`minimum`, `exclusiveMinimum` as a number or,
    /// as in draft 4, a flag on `minimum`; likewise for the maximum), the tighter one where two are given.
    func numberBounds(_ schema: SchemaObject) throws -> (lower: (value: Double, exclusive: Bool)?, upper: (value: Double, exclusive: Bool)?) {
        func bound(_ plain: String, _ exclusive: String, lower: Bool) throws -> (value: Double, exclusive: Bool)? {
            var result: (value: Double, exclusive: Bool)? = nil
            let flag: Bool
            switch schema[exclusive] {
            case .bool(let b)?: flag = b
            default: flag = false
            }
            if let v = schema[plain] {
                guard let x = v.numberValue, x.isFinite else { throw schema.error("\(plain) must be a number") }
                result = (x, flag)
            } else if flag {
                throw schema.error("\(exclusive): true needs \(plain) beside it")
            }
            if let v = schema[exclusive], v.boolValue == nil {
                guard let x = v.numberValue, x.isFinite else { throw schema.error("\(exclusive) must be a number") }
                if let r = result {
                    // The tighter of the two; at the same value the exclusive one.
                    if lower ? x >= r.value : x <= r.value { result = (x, true) }
                } else {
                    result = (x, true)
                }
            }
            return result
        }
        return (try bound("minimum", "exclusiveMinimum", lower: true), try bound("maximum", "exclusiveMaximum", lower: false))
    }

    /// The integer schema: digits between the bounds exactly (and, on a side without a bound,
    /// up to `maximumNumberDigits` digits).
    mutating func integerAlternatives(_ schema: SchemaObject) throws -> [[Grammar.Element]] {
        let (lower, upper) = try numberBounds(schema)
        if lower == nil && upper == nil { return [[.rule(anyIntegerRule())]] }
        // The smallest and largest integers the bounds allow, from the bounds' exact values.
        let low = lower.map { b -> DecimalDigits in
            let ceiling = DecimalDigits.integer(b.value, roundingUp: true)
            return b.exclusive && b.value.rounded(.up) == b.value ? ceiling.successor : ceiling
        }
        let high = upper.map { b -> DecimalDigits in
            let floor = DecimalDigits.integer(b.value, roundingUp: false)
            return b.exclusive && b.value.rounded(.down) == b.value ? floor.predecessor : floor
        }
        if let l = low, let h = high, h < l {
            throw schema.error("no integer lies between the bounds (the smallest allowed would be \(l.text), the largest \(h.text)); check minimum and maximum")
        }
        let cap = options.maximumNumberDigits
        var alternatives: [[Grammar.Element]] = []
        // Negative integers, "-" and a magnitude m >= 1: -m >= low when m <= |low|, -m <= high when m >= |high|.
        if low?.negative ?? true {
            let from = high.map { $0.negative ? $0.magnitude.integer : [1] } ?? [1]
            for (_, sequences) in integerRange(from: from, to: low?.magnitude.integer, cap: cap) {
                for s in sequences { alternatives.append(Self.literal("-") + s) }
            }
        }
        // Zero and positive integers, from max(low, 0) to high.
        if !(high?.negative ?? false) {
            let from = low.map { $0.negative ? [0] : $0.integer } ?? [0]
            for (_, sequences) in integerRange(from: from, to: high?.integer, cap: cap) { alternatives += sequences }
        }
        return alternatives
    }

    /// Sequences of digits for the integers from `from` to `to` (nil: up to `cap` digits or, with no
    /// cap, without end), without leading zeros, grouped by their number of digits.
    mutating func integerRange(from: [UInt8], to: [UInt8]?, cap: Int?) -> [(length: Int, sequences: [[Grammar.Element]])] {
        var out: [(length: Int, sequences: [[Grammar.Element]])] = []
        let first = from.count
        if let to {
            guard DecimalDigits.compareMagnitude(DecimalDigits(negative: false, integer: from), DecimalDigits(negative: false, integer: to)) <= 0 else { return [] }
            for length in first...to.count {
                let low = length == first ? from : [1] + Array(repeating: 0, count: length - 1)
                let high = length == to.count ? to : Array(repeating: 9, count: length)
                out.append((length, equalLengthRange(low[...], high[...])))
            }
            return out
        }
        let last = max(first, cap ?? first)
        out.append((first, equalLengthRange(from[...], Array(repeating: 9, count: first)[...])))
        if cap == nil {
            // Every longer number: [1-9] and at least `first` more digits.
            out.append((first + 1, [[Self.digits(1, 9)] + builder.repeated([Self.digits(0, 9)], minimum: first, maximum: nil, name: "digits")]))
        } else if last > first {
            for length in (first + 1)...last { out.append((length, [[Self.digits(1, 9)] + Array(repeating: Self.digits(0, 9), count: length - 1)])) }
        }
        return out
    }

    /// The digit strings from `low` to `high`, both of one length: the shared leading digits,
    /// then the rest of low's leading digit, the digits between, and the start of high's.
    mutating func equalLengthRange(_ low: ArraySlice<UInt8>, _ high: ArraySlice<UInt8>) -> [[Grammar.Element]] {
        guard let l = low.first, let h = high.first else { return [[]] }
        let restLow = low.dropFirst(), restHigh = high.dropFirst()
        if l == h { return [[Self.digits(l, l)] + wrap(equalLengthRange(restLow, restHigh), name: "digits")] }
        let lowFromZeros = restLow.allSatisfy { $0 == 0 }, highToNines = restHigh.allSatisfy { $0 == 9 }
        var out: [[Grammar.Element]] = []
        if !lowFromZeros {
            out.append([Self.digits(l, l)] + wrap(equalLengthRange(restLow, ArraySlice(repeating: 9, count: restLow.count)), name: "digits"))
        }
        let middleLow = lowFromZeros ? l : l + 1, middleHigh = highToNines ? h : h - 1
        if middleLow <= middleHigh { out.append([Self.digits(middleLow, middleHigh)] + Array(repeating: Self.digits(0, 9), count: restLow.count)) }
        if !highToNines {
            out.append([Self.digits(h, h)] + wrap(equalLengthRange(ArraySlice(repeating: 0, count: restHigh.count), restHigh), name: "digits"))
        }
        return out
    }

    /// One sequence for `alternatives`: itself when there is one, else a rule.
    mutating func wrap(_ alternatives: [[Grammar.Element]], name: String) -> [Grammar.Element] {
        alternatives.count == 1 ? alternatives[0] : [.rule(builder.fresh(name, alternatives))]
    }

    /// The number schema: without bounds any JSON number (integer and fraction parts up to
    /// `maximumNumberDigits` digits, an exponent of up to three); with bounds decimals without
    /// exponent of up to 15 significant digits, compared with the bounds digit by digit.
    mutating func numberAlternatives(_ schema: SchemaObject) throws -> [[Grammar.Element]] {
        let (lower, upper) = try numberBounds(schema)
        if lower == nil && upper == nil { return [[.rule(anyNumberRule())]] }
        let low = lower.map { NumberBound(value: DecimalDigits(shortest: $0.value), exclusive: $0.exclusive) }
        let high = upper.map { NumberBound(value: DecimalDigits(shortest: $0.value), exclusive: $0.exclusive) }
        if let low, let high, high.value < low.value || (high.value == low.value && (low.exclusive || high.exclusive)) {
            throw schema.error("no number lies between the bounds (from \(low.value.text) to \(high.value.text)); check minimum/maximum")
        }
        var alternatives: [[Grammar.Element]] = []
        // Zero and positive numbers: magnitudes within [max(low, 0), high].
        if high.map({ !$0.value.negative && !($0.value.isZero && $0.exclusive) }) ?? true {
            let from = low.flatMap { $0.value.negative ? nil : $0 }
            alternatives += decimalMagnitudes(from: from, to: high)
        }
        // Negative numbers: "-" and a magnitude above 0 (so that -0 is not written twice), within [-high, -low].
        if low.map({ $0.value.negative }) ?? true {
            let from = high.flatMap { $0.value.negative ? NumberBound(value: $0.value.magnitude, exclusive: $0.exclusive) : nil }
                ?? NumberBound(value: DecimalDigits(negative: false, integer: [0]), exclusive: true)
            let to = low.map { NumberBound(value: $0.value.magnitude, exclusive: $0.exclusive) }
            for s in decimalMagnitudes(from: from, to: to) { alternatives.append(Self.literal("-") + s) }
        }
        guard !alternatives.isEmpty else {
            throw schema.error("no number of at most \(Self.boundedDecimalDigits) significant digits lies between the bounds; check minimum/maximum")
        }
        return alternatives
    }

    /// Unsigned decimals (integer part, optional fraction) from `from` to `to` (nil: unbounded).
    mutating func decimalMagnitudes(from: NumberBound?, to: NumberBound?) -> [[Grammar.Element]] {
        let digits = Self.boundedDecimalDigits
        let a = from?.value.integer ?? [0]
        var out: [[Grammar.Element]] = []
        // The fraction after an integer part of `length` digits: at most 15 significant digits in all.
        func fractionCap(_ integer: [UInt8]) -> Int { integer == [0] ? digits : digits - integer.count }
        func fractionCap(length: Int) -> Int { digits - length }
        if let to, to.value.integer == a {
            // One integer part: the fraction between both bounds.
            let f = fractionDigits(lower: from.map { FractionBound(digits: $0.value.fraction[...], exclusive: $0.exclusive) },
                                   upper: FractionBound(digits: to.value.fraction[...], exclusive: to.exclusive),
                                   cap: fractionCap(a))
            if let tail = fractionPart(f) { out.append(Self.literal(a.map(String.init).joined()) + tail) }
            return out
        }
        // The lower bound's integer part, with a fraction at least the bound's.
        if a.count <= digits {
            let f = fractionDigits(lower: from.map { FractionBound(digits: $0.value.fraction[...], exclusive: $0.exclusive) },
                                   upper: nil, cap: fractionCap(a))
            if let tail = fractionPart(f) { out.append(Self.literal(a.map(String.init).joined()) + tail) }
        }
        // Integer parts strictly between, with any fraction.
        let next = DecimalDigits.addOne(a)
        let last: [UInt8]? = to.map { DecimalDigits.subtractOne($0.value.integer) }
        if last == nil || DecimalDigits.compareMagnitude(DecimalDigits(negative: false, integer: next), DecimalDigits(negative: false, integer: last!)) <= 0 {
            for (length, sequences) in integerRange(from: next, to: last, cap: max(digits, next.count)) where length <= digits {
                let f = fractionDigits(lower: nil, upper: nil, cap: fractionCap(length: length))
                guard let tail = fractionPart(f) else { continue }
                for s in sequences { out.append(s + tail) }
            }
        }
        // The upper bound's integer part, with a fraction at most the bound's.
        if let to, to.value.integer.count <= digits {
            let b = to.value.integer
            let f = fractionDigits(lower: nil, upper: FractionBound(digits: to.value.fraction[...], exclusive: to.exclusive), cap: fractionCap(b))
            if let tail = fractionPart(f) { out.append(Self.literal(b.map(String.init).joined()) + tail) }
        }
        return out
    }

    /// What follows an integer part: nothing and/or "." and the fraction's digits; nil when neither.
    mutating func fractionPart(_ f: (empty: Bool, digits: [[Grammar.Element]])) -> [Grammar.Element]? {
        if f.digits.isEmpty { return f.empty ? [] : nil }
        let dotted = Self.literal(".") + wrap(f.digits, name: "fraction")
        if !f.empty { return dotted }
        return [.rule(builder.fresh("fraction", [dotted, []]))]
    }

    struct FractionBound: Hashable {
        var digits: ArraySlice<UInt8>
        var exclusive: Bool
    }

    /// The digit strings `s` after a decimal point such that 0.s lies above `lower` and below
    /// `upper` (both fractions, nil for no bound), of at most `cap` digits: whether the empty one
    /// does, and the sequences for the others. A bound is followed digit by digit: a digit above a
    /// lower bound's (below an upper bound's) settles it, an equal one carries it to the next.
    mutating func fractionDigits(lower: FractionBound?, upper: FractionBound?, cap: Int) -> (empty: Bool, digits: [[Grammar.Element]]) {
        var lower = lower
        // A lower bound of zeros that is met is no bound.
        if let l = lower, l.digits.allSatisfy({ $0 == 0 }), !l.exclusive { lower = nil }
        // The empty string is 0.000…: below any lower bound but a met one; above an upper bound only if that is an exclusive 0.
        let emptyAllowed = lower == nil && (upper.map { !($0.digits.allSatisfy { $0 == 0 } && $0.exclusive) } ?? true)
        guard cap > 0 else { return (emptyAllowed, []) }
        let key = FractionKey(lower: lower, upper: upper, cap: cap)
        if let known = fractionRules[key] { return (emptyAllowed, known.isEmpty ? [] : [[.rule(known[0])]]) }
        if lower == nil && upper == nil {
            let r = builder.fresh("fraction-digits", [[Self.digits(0, 9)] + builder.repeated([Self.digits(0, 9)], minimum: 0, maximum: cap - 1, name: "fraction-digits")])
            fractionRules[key] = [r]
            return (true, [[.rule(r)]])
        }
        // Digits grouped by where they lead.
        var groups: [(low: UInt8, high: UInt8, lower: FractionBound?, upper: FractionBound?)] = []
        for d in UInt8(0)...9 {
            var nextLower: FractionBound? = nil, nextUpper: FractionBound? = nil
            if let l = lower {
                let ld = l.digits.first ?? 0
                if d < ld { continue }
                if d == ld { nextLower = FractionBound(digits: l.digits.dropFirst(), exclusive: l.exclusive) }
            }
            if let u = upper {
                let ud = u.digits.first ?? 0
                if d > ud { continue }
                if d == ud { nextUpper = FractionBound(digits: u.digits.dropFirst(), exclusive: u.exclusive) }
            }
            if let last = groups.last, last.high + 1 == d, last.lower == nextLower, last.upper == nextUpper {
                groups[groups.count - 1].high = d
            } else {
                groups.append((d, d, nextLower, nextUpper))
            }
        }
        var sequences: [[Grammar.Element]] = []
        for g in groups {
            let rest = fractionDigits(lower: g.lower, upper: g.upper, cap: cap - 1)
            let digit = Self.digits(g.low, g.high)
            switch (rest.empty, rest.digits.isEmpty) {
            case (true, true): sequences.append([digit])
            case (false, true): continue
            case (false, false): sequences.append([digit] + wrap(rest.digits, name: "fraction"))
            case (true, false): sequences.append([digit, .rule(builder.fresh("fraction", [wrap(rest.digits, name: "fraction"), []]))])
            }
        }
        guard !sequences.isEmpty else {
            fractionRules[key] = []
            return (emptyAllowed, [])
        }
        let r = builder.fresh("fraction", sequences)
        fractionRules[key] = [r]
        return (emptyAllowed, [[.rule(r)]])
    }

    struct FractionKey: Hashable {
        var lower: FractionBound?
        var upper: FractionBound?
        var cap: Int
    }

    /// Any JSON number: an integer part of up to `maximumNumberDigits` digits, a fraction of as
    /// many, an exponent of up to three digits.
    mutating func anyNumberRule() -> Int {
        if builder.has("number") { return builder.reference("number") }
        let cap = options.maximumNumberDigits
        let integer = integerPartRule("number-integer", digits: "number-digits", cap: cap)
        let fraction = builder.repeated(Self.literal(".") + builder.repeated([Self.digits(0, 9)], minimum: 1, maximum: cap, name: "number-fraction"),
                                        minimum: 0, maximum: 1, name: "number-fraction")
        let sign = Grammar.Element.characters(Grammar.CharacterClass(CodePointSet("+-").ranges))
        let exponent = builder.repeated([.characters(Grammar.CharacterClass(CodePointSet("eE").ranges))]
                                        + builder.repeated([sign], minimum: 0, maximum: 1, name: "number-exponent")
                                        + builder.repeated([Self.digits(0, 9)], minimum: 1, maximum: 3, name: "number-exponent"),
                                        minimum: 0, maximum: 1, name: "number-exponent")
        return builder.define("number", [builder.repeated(Self.literal("-"), minimum: 0, maximum: 1, name: "number-sign") + [.rule(integer)] + fraction + exponent])
    }

    /// Any JSON integer: "-"? and up to `maximumNumberDigits` digits.
    mutating func anyIntegerRule() -> Int {
        if builder.has("integer") { return builder.reference("integer") }
        let cap = options.maximumNumberDigits
        let magnitude = integerPartRule("integer-magnitude", digits: "integer-digits", cap: cap)
        return builder.define("integer", [builder.repeated(Self.literal("-"), minimum: 0, maximum: 1, name: "integer-sign") + [.rule(magnitude)]])
    }

    /// The rule `name`: "0", or a digit 1–9 followed by up to `cap - 1` digits (the repetition
    /// named `digits`), as JSON writes a number's integer part.
    private mutating func integerPartRule(_ name: String, digits: String, cap: Int?) -> Int {
        builder.define(name, [
            Self.literal("0"),
            [Self.digits(1, 9)] + builder.repeated([Self.digits(0, 9)], minimum: 0, maximum: cap.map { $0 - 1 }, name: digits),
        ])
    }
}
