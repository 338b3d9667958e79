
/// A grammar laid out for recognition: every alternative's elements in one array, each
/// followed by an end marker, so that a place in the grammar is one integer.
public final class CompiledGrammar: Sendable {
    enum Slot: Sendable {
        case characters(Grammar.CharacterClass)
        case rule(Int)
        case token(Int32, negated: Bool)
        case end
    }

    let slots: [Slot]
    /// Where each rule's alternatives start.
    let starts: [[Int32]]
    let root: Int
    /// Whether the grammar has token elements (then tokens are checked whole, not only by bytes).
    let hasTokens: Bool
    /// For each slot, the fewest bytes from it to the end of its alternative.
    let remainingBytes: [Int]

    public init(_ grammar: Grammar) {
        var slots: [Slot] = []
        var starts: [[Int32]] = []
        var hasTokens = false
        for rule in grammar.rules {
            var ruleStarts: [Int32] = []
            for alternative in rule.alternatives {
                ruleStarts.append(Int32(slots.count))
                for element in alternative {
                    switch element {
                    case .characters(let c): slots.append(.characters(c))
                    case .rule(let r): slots.append(.rule(r))
                    case .token(let t, let negated):
                        slots.append(.token(t, negated: negated))
                        hasTokens = true
                    }
                }
                slots.append(.end)
            }
            starts.append(ruleStarts)
        }
        self.slots = slots
        self.starts = starts
        root = grammar.root
        self.hasTokens = hasTokens
        remainingBytes = Self.remainingLengths(grammar, slots: slots, cost: Grammar.minimumBytes(of:))
    }

    /// For each slot, the fewest units (as `cost` counts a character class) from it to the end
    /// of its alternative.
    static func remainingLengths(_ grammar: Grammar, slots: [Slot], cost: (Grammar.CharacterClass) -> Int) -> [Int] {
        let minimum = grammar.minimumLengths(cost: cost)
        var remaining = [Int](repeating: 0, count: slots.count)
        for i in slots.indices.reversed() {
            switch slots[i] {
            case .end: remaining[i] = 0
            case .characters(let c): remaining[i] = min(Grammar.unreachableLength, cost(c) + remaining[i + 1])
            case .rule(let r): remaining[i] = min(Grammar.unreachableLength, minimum[r] + remaining[i + 1])
            case .token: remaining[i] = min(Grammar.unreachableLength, 1 + remaining[i + 1])
            }
        }
        return remaining
    }

    /// For each slot, the fewest tokens from it to the end of its alternative when text is
    /// written one byte a token with the bytes `single` marks.
    func remainingTokens(_ grammar: Grammar, single: [Bool]) -> [Int] {
        var costs: [Grammar.CharacterClass: Int] = [:]
        return Self.remainingLengths(grammar, slots: slots) { cls in
            if let known = costs[cls] { return known }
            let cost = Grammar.minimumTokens(of: cls, single: single)
            costs[cls] = cost
            return cost
        }
    }

    /// The fewest bytes that take `state` to a complete match: along each stack, what is left
    /// of every frame's alternative (each entry is the place where its frame goes on), the
    /// smallest over the stacks; the continuation bytes a character still needs come first.
    public func shortestCompletion(_ state: GrammarState) -> Int {
        shortestCompletion(state, remaining: remainingBytes, continuation: 1)
    }

    /// The same in the units of `remaining` (from `remainingLengths`), each continuation byte of
    /// a character begun costing `continuation`.
    func shortestCompletion(_ state: GrammarState, remaining: [Int], continuation: Int) -> Int {
        var best = Grammar.unreachableLength
        for stack in state.stacks {
            var total = 0
            for (i, place) in stack.enumerated() {
                // A character begun: the rest of it, then what follows it.
                let p = state.remaining > 0 && i == stack.count - 1 ? Int(place) + 1 : Int(place)
                total = min(Grammar.unreachableLength, total + remaining[p])
            }
            if state.remaining > 0 {
                guard !stack.isEmpty else { continue }
                total = min(Grammar.unreachableLength, total + Int(state.remaining) * continuation)
            }
            best = min(best, total)
        }
        return best
    }

    /// The state before any output.
    public func start() -> GrammarState {
        var stacks = Set<[Int32]>()
        for alternative in starts[root] { expand([alternative], into: &stacks) }
        return GrammarState(stacks: stacks.sorted(by: Self.order))
    }

    static func order(_ a: [Int32], _ b: [Int32]) -> Bool { a.lexicographicallyPrecedes(b) }

    /// Every stack `stack` stands for once the rule references on top are opened, so that each
    /// stack's top is a terminal (or the stack is empty: the output may end here). A rule
    /// reference opened again before anything is matched (a repetition of something that can
    /// be empty) is skipped: it leads to nothing new.
    func expand(_ stack: [Int32], into out: inout Set<[Int32]>) {
        var opened: [Int32] = []
        var working = stack
        working.reserveCapacity(stack.count + 8)
        expand(&working, opened: &opened, into: &out)
    }

    /// Expands `stack` in place, putting it back as it was before returning (one working stack
    /// instead of a copy per step).
    private func expand(_ stack: inout [Int32], opened: inout [Int32], into out: inout Set<[Int32]>) {
        guard let top = stack.last else {
            out.insert(stack)
            return
        }
        switch slots[Int(top)] {
        case .characters, .token:
            out.insert(stack)
        case .end:
            stack.removeLast()
            expand(&stack, opened: &opened, into: &out)
            stack.append(top)
        case .rule(let r):
            guard !opened.contains(top) else { return }
            opened.append(top)
            // A reference that ends its alternative leaves nothing to come back to: its place is
            // dropped rather than kept (a tail call), so a repetition `r ::= x r | ε` goes on at
            // a constant depth and its states recur instead of growing with every item.
            let tail: Bool
            if case .end = slots[Int(top) + 1] { tail = true } else { tail = false }
            if tail { stack.removeLast() } else { stack[stack.count - 1] = top + 1 }
            for alternative in starts[r] {
                stack.append(alternative)
                expand(&stack, opened: &opened, into: &out)
                stack.removeLast()
            }
            if tail { stack.append(top) } else { stack[stack.count - 1] = top }
            opened.removeLast()
        }
    }

    /// The stacks after `stacks` match code point `c`.
    func advance(_ stacks: [[Int32]], by c: UInt32) -> [[Int32]] {
        var out = Set<[Int32]>()
        for stack in stacks {
            guard let top = stack.last, case .characters(let cls) = slots[Int(top)], cls.matches(c) else { continue }
            var next = stack
            next[next.count - 1] = top + 1
            expand(next, into: &out)
        }
        return out.count <= 1 ? Array(out) : out.sorted(by: Self.order)
    }

    /// The stacks after `stacks` match the whole token `token`, through token elements.
    func advance(_ stacks: [[Int32]], byToken token: Int32) -> [[Int32]] {
        var out = Set<[Int32]>()
        for stack in stacks {
            guard let top = stack.last, case .token(let t, let negated) = slots[Int(top)], (t == token) != negated else { continue }
            var next = stack
            next[next.count - 1] = top + 1
            expand(next, into: &out)
        }
        return out.sorted(by: Self.order)
    }

    /// Whether a stack's top can match a code point in `low...high`.
    func admits(_ stacks: [[Int32]], low: UInt32, high: UInt32) -> Bool {
        stacks.contains { stack in
            guard let top = stack.last, case .characters(let cls) = slots[Int(top)] else { return false }
            return cls.intersects(low, high)
        }
    }

    /// Whether some stack waits for a token element.
    func waitsForToken(_ stacks: [[Int32]]) -> Bool {
        stacks.contains { stack in
            guard let top = stack.last, case .token = slots[Int(top)] else { return false }
            return true
        }
    }
}

/// Where a recognition stands: the ways the output so far can continue (stacks of places in
/// the grammar) and the bytes of a character not yet complete.
public struct GrammarState: Hashable, Sendable {
    var stacks: [[Int32]]
    /// The code point's bits so far and how many continuation bytes it still needs.
    var partial: UInt32 = 0
    var remaining: UInt8 = 0
    /// The smallest code point the bytes so far may start (overlong encodings are refused).
    var partialMinimum: UInt32 = 0

    /// Whether the output may end here.
    public var isAccepting: Bool { remaining == 0 && stacks.contains { $0.isEmpty } }
    /// Whether the output may go on.
    public var canContinue: Bool { stacks.contains { !$0.isEmpty } }
    /// Whether nothing at all can follow (the output so far is not a prefix of the grammar's).
    public var isDead: Bool { stacks.isEmpty }

    /// Takes one byte of UTF-8 output; false (state unchanged) when the grammar cannot take it.
    public mutating func step(_ byte: UInt8, in grammar: CompiledGrammar) -> Bool {
        if remaining == 0 {
            switch byte {
            case 0..<0x80:
                let next = grammar.advance(stacks, by: UInt32(byte))
                guard !next.isEmpty else { return false }
                stacks = next
                return true
            case 0xC2...0xDF: return begin(UInt32(byte & 0x1F), need: 1, minimum: 0x80, grammar)
            case 0xE0...0xEF: return begin(UInt32(byte & 0x0F), need: 2, minimum: 0x800, grammar)
            case 0xF0...0xF4: return begin(UInt32(byte & 0x07), need: 3, minimum: 0x10000, grammar)
            default: return false
            }
        }
        guard byte & 0xC0 == 0x80 else { return false }
        let value = partial << 6 | UInt32(byte & 0x3F)
        if remaining == 1 {
            guard value >= partialMinimum, value <= 0x10FFFF, !(0xD800...0xDFFF).contains(value) else { return false }
            let next = grammar.advance(stacks, by: value)
            guard !next.isEmpty else { return false }
            stacks = next
            partial = 0
            remaining = 0
            return true
        }
        let low = value << (6 * UInt32(remaining - 1)), high = low | ((1 << (6 * UInt32(remaining - 1))) - 1)
        guard high >= partialMinimum, low <= 0x10FFFF, grammar.admits(stacks, low: max(low, partialMinimum), high: min(high, 0x10FFFF)) else {
            return false
        }
        partial = value
        remaining -= 1
        return true
    }

    private mutating func begin(_ bits: UInt32, need: UInt8, minimum: UInt32, _ grammar: CompiledGrammar) -> Bool {
        let shift = 6 * UInt32(need)
        let low = bits << shift, high = low | ((1 << shift) - 1)
        guard high >= minimum, grammar.admits(stacks, low: max(low, minimum), high: min(high, 0x10FFFF)) else { return false }
        partial = bits
        remaining = need
        partialMinimum = minimum
        return true
    }

    /// The classes of the characters that may come next (the tops of the stacks); empty when
    /// only the end or a whole token may.
    public func nextCharacters(in grammar: CompiledGrammar) -> [Grammar.CharacterClass] {
        stacks.compactMap { stack in
            guard let top = stack.last, case .characters(let cls) = grammar.slots[Int(top)] else { return nil }
            return cls
        }
    }

    /// Takes `bytes`; false (state unchanged) when the grammar cannot take all of them.
    public mutating func consume(_ bytes: some Sequence<UInt8>, in grammar: CompiledGrammar) -> Bool {
        var copy = self
        for b in bytes { guard copy.step(b, in: grammar) else { return false } }
        self = copy
        return true
    }

    /// Takes a whole token through a token element; false when none admits it.
    public mutating func consumeToken(_ token: Int32, in grammar: CompiledGrammar) -> Bool {
        guard remaining == 0 else { return false }
        let next = grammar.advance(stacks, byToken: token)
        guard !next.isEmpty else { return false }
        stacks = next
        return true
    }
}
