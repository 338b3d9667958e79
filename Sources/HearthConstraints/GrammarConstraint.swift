import Synchronization

/// A grammar's rule for the sampler: a token may come next when its bytes (or, for the
/// grammar's token elements, the token itself) keep the output a beginning of something the
/// grammar matches; an end-of-generation token only once the output is complete.
///
/// Marking the whole vocabulary walks a trie of the tokens' bytes with the recognizer, so a
/// refused prefix rules out every token that starts with it, and remembers the mask for the
/// state: states recur within an answer and across answers (`GrammarProgram` keeps them).
public struct GrammarConstraint: TokenConstraint {
    public let program: GrammarProgram
    /// The output so far.
    public private(set) var state: GrammarState
    /// Tokens left before the budget ends, counting the one about to be sampled (nil: no budget).
    /// Near the end (see `budgetMargin`), only tokens after which the output can still be
    /// completed within the budget are allowed: the shortest completion written one byte a
    /// token with the vocabulary's single-byte tokens, and one more for the end-of-generation
    /// token.
    public var remainingTokens: Int? = nil

    /// How close (in tokens) the shortest completion must come to the budget before tokens are
    /// refused for it; further away the masks are exactly those without a budget.
    public static let budgetMargin = 32

    public init(program: GrammarProgram) {
        self.program = program
        state = program.grammar.start()
    }

    /// The constraint with the output so far at `state`.
    public init(program: GrammarProgram, state: GrammarState) {
        self.program = program
        self.state = state
    }

    /// Whether the output so far is complete (the grammar matches it).
    public var isAccepting: Bool { state.isAccepting }
    /// Whether the output is complete and nothing more can follow it.
    public var isComplete: Bool { state.isAccepting && !state.canContinue }

    /// The tokens at least that `state` needs to end: none when complete, the end token when it
    /// may end, else its shortest completion and the end token (`Grammar.unreachableLength`
    /// when the vocabulary's single-byte tokens cannot write a completion, or it has no end
    /// token).
    public func completionCost(_ state: GrammarState) -> Int { program.completionCost(state) }

    /// The budget tokens must keep to, when it is near: a text token is allowed only if the
    /// state after it costs at most this.
    var budgetLimit: Int? {
        guard let remaining = remainingTokens else { return nil }
        let cost = completionCost(state)
        // Past saving (a budget smaller than the shortest completion, or a completion the
        // vocabulary cannot write a byte a token): none is refused for it.
        guard remaining <= cost + Self.budgetMargin, cost <= remaining else { return nil }
        return remaining - 1
    }

    /// Whether `token`, which the grammar allows, leaves the output completable within `limit`.
    private func fits(_ token: Int32, limit: Int) -> Bool {
        if program.table.kinds[Int(token)] == .end && state.isAccepting { return true }
        guard let next = program.next(state, token) else { return false }
        return completionCost(next) <= limit
    }

    public func allows(_ token: Int32) -> Bool {
        guard program.next(state, token) != nil else { return false }
        guard let limit = budgetLimit else { return true }
        return fits(token, limit: limit)
    }

    /// Takes `token` into the output; false (nothing changes) when the grammar refuses it.
    public mutating func accept(_ token: Int32) -> Bool {
        guard let next = program.next(state, token) else { return false }
        state = next
        return true
    }

    public func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int) {
        let words = min(mask.count, (vocabularySize + 63) / 64)
        switch (budgetLimit, program.grammar.hasTokens) {
        case (nil, _):
            let computed = program.mask(for: state)
            for i in 0..<min(words, computed.count) { mask[i] |= computed[i] }
        case (let limit?, false):
            // The trie's walk that stops where the completion costs too much.
            let computed = program.mask(for: state, costAtMost: limit)
            for i in 0..<min(words, computed.count) { mask[i] |= computed[i] }
        case (let limit?, true):
            // A token element's state is not the byte automaton's: each allowed token is asked.
            let computed = program.mask(for: state)
            for i in 0..<min(words, computed.count) {
                var word = computed[i]
                while word != 0 {
                    let bit = word.trailingZeroBitCount
                    word &= word - 1
                    if fits(Int32(i * 64 + bit), limit: limit) { mask[i] |= 1 << UInt64(bit) }
                }
            }
        }
    }
}

/// A grammar compiled against one vocabulary: the tokens' bytes in a trie, the states met so
/// far as a byte automaton built as it is explored (a state's step on a byte is computed
/// once), and the masks of those states (shared by every generation that uses the program).
public final class GrammarProgram: Sendable {
    public let grammar: CompiledGrammar
    let table: TokenByteTable
    let trie: TokenTrie
    private let automaton: Mutex<ByteAutomaton>
    /// Masks by state and, near a budget, the highest completion cost allowed.
    private let masks = Mutex<[MaskKey: [UInt64]]>([:])
    private let counters = Mutex(MaskStatistics())

    /// How the program's whole-vocabulary masks were had so far.
    public struct MaskStatistics: Sendable, Equatable {
        /// Masks computed (a state met for the first time, or again after the cache was emptied).
        public var computed = 0
        /// Masks found in the cache.
        public var cached = 0
        /// Time spent computing masks.
        public var computeSeconds = 0.0

        /// Nothing counted yet.
        public init() {}
    }

    /// How the program's masks were had so far (for benchmarks).
    public var statistics: MaskStatistics { counters.withLock { $0 } }

    /// For each place in the grammar, the fewest tokens from it to the end of its alternative,
    /// text written one byte a token with the vocabulary's single-byte tokens.
    private let remainingTokens: [Int]
    /// What each continuation byte of a character begun costs so (`Grammar.unreachableLength`
    /// when some continuation byte has no token of its own).
    private let continuationCost: Int
    /// Whether the vocabulary has an end-of-generation token.
    let canEnd: Bool

    public init(_ grammar: Grammar, table: TokenByteTable) {
        self.grammar = CompiledGrammar(grammar)
        self.table = table
        var single = [Bool](repeating: false, count: 256)
        for token in 0..<table.vocabularySize where table.kinds[token] == .text
            && table.offsets[token + 1] - table.offsets[token] == 1 {
            single[Int(table.bytes[Int(table.offsets[token])])] = true
        }
        remainingTokens = self.grammar.remainingTokens(grammar, single: single)
        continuationCost = (0x80...0xBF).allSatisfy { single[$0] } ? 1 : Grammar.unreachableLength
        canEnd = !table.endTokens.isEmpty
        trie = table.trie
        automaton = Mutex(ByteAutomaton())
    }

    /// The fewest tokens that take `state` to a complete match, written one byte a token with
    /// the vocabulary's single-byte tokens (the end-of-generation token not counted).
    public func shortestCompletionTokens(_ state: GrammarState) -> Int {
        grammar.shortestCompletion(state, remaining: remainingTokens, continuation: continuationCost)
    }

    /// The tokens at least that `state` needs to end: none when complete, the end token when it
    /// may end, else its shortest completion and the end token (`Grammar.unreachableLength`
    /// when the vocabulary's single-byte tokens cannot write a completion, or it has no end
    /// token).
    public func completionCost(_ state: GrammarState) -> Int {
        if state.isAccepting { return state.canContinue ? 1 : 0 }
        guard canEnd else { return Grammar.unreachableLength }
        return min(Grammar.unreachableLength, shortestCompletionTokens(state) + 1)
    }

    /// Most masks kept: about 8 MB of them.
    var maskCapacity: Int { max(16, (8 << 20) / ((table.vocabularySize + 63) / 64 * 8)) }

    /// The state after `token`, or nil when the grammar refuses it.
    func next(_ state: GrammarState, _ token: Int32) -> GrammarState? {
        guard token >= 0, Int(token) < table.vocabularySize else { return nil }
        var viaToken: GrammarState? = nil
        if grammar.hasTokens {
            var s = state
            if s.consumeToken(token, in: grammar) { viaToken = s }
        }
        switch table.kinds[Int(token)] {
        case .end:
            return state.isAccepting ? state : viaToken
        case .excluded:
            return viaToken
        case .text:
            guard grammar.hasTokens else {
                // Through the automaton: a step met before is a lookup.
                return automaton.withLock { automaton in
                    if automaton.stateCount > ByteAutomaton.capacity { automaton = ByteAutomaton() }
                    var id = automaton.id(of: state)
                    for i in Int(table.offsets[Int(token)])..<Int(table.offsets[Int(token) + 1]) {
                        id = automaton.next(id, table.bytes[i], grammar: grammar)
                        if id < 0 { return nil }
                    }
                    return automaton.state(id)
                }
            }
            var s = state
            let ok = table.bytes.withUnsafeBufferPointer { bytes in
                for i in Int(table.offsets[Int(token)])..<Int(table.offsets[Int(token) + 1]) {
                    guard s.step(bytes[i], in: grammar) else { return false }
                }
                return true
            }
            guard ok else { return viaToken }
            guard let other = viaToken, s.remaining == 0 else { return s }
            s.stacks = Array(Set(s.stacks).union(other.stacks)).sorted(by: CompiledGrammar.order)
            return s
        }
    }

    /// The allowed tokens after `state`, one bit each.
    func mask(for state: GrammarState) -> [UInt64] {
        cachedMask(MaskKey(state: state, limit: nil)) { words in
            func mark(_ token: Int32) { words[Int(token) >> 6] |= 1 << UInt64(token & 63) }
            automaton.withLock { automaton in
                if automaton.stateCount > ByteAutomaton.capacity { automaton = ByteAutomaton() }
                trie.walk(from: automaton.id(of: state), automaton: &automaton, grammar: grammar, mask: words.baseAddress!)
            }
            if state.isAccepting { for token in table.endTokens { mark(token) } }
            if grammar.hasTokens && grammar.waitsForToken(state.stacks) {
                for token in 0..<Int32(table.vocabularySize) {
                    var s = state
                    if s.consumeToken(token, in: grammar) { mark(token) }
                }
            }
        }
    }

    /// The text tokens after which `state` can still be completed at a cost of at most `limit`
    /// (see `completionCost`), with the end-of-generation tokens when `state` may end, one bit
    /// each: the walk of `mask(for:)` that also leaves out a token whose state costs more.
    /// Costs are kept per state of the automaton.
    func mask(for state: GrammarState, costAtMost limit: Int) -> [UInt64] {
        cachedMask(MaskKey(state: state, limit: limit)) { words in
            automaton.withLock { automaton in
                if automaton.stateCount > ByteAutomaton.capacity { automaton = ByteAutomaton() }
                trie.walk(from: automaton.id(of: state), automaton: &automaton, grammar: grammar, mask: words.baseAddress!) { automaton, id in
                    automaton.cost(of: id, completionCost) <= limit
                }
            }
            if state.isAccepting {
                for token in table.endTokens { words[Int(token) >> 6] |= 1 << UInt64(token & 63) }
            }
        }
    }

    /// The mask kept for `key`, or the one `compute` marks into zeroed words (then kept).
    private func cachedMask(_ key: MaskKey, compute: (UnsafeMutableBufferPointer<UInt64>) -> Void) -> [UInt64] {
        if let known = masks.withLock({ $0[key] }) {
            counters.withLock { $0.cached += 1 }
            return known
        }
        let started = ContinuousClock.now
        var computed = [UInt64](repeating: 0, count: (table.vocabularySize + 63) / 64)
        computed.withUnsafeMutableBufferPointer { compute($0) }
        let capacity = maskCapacity
        masks.withLock { masks in
            // Emptying when full is simpler than tracking use, and the states that recur come back soon.
            if masks.count >= capacity { masks.removeAll(keepingCapacity: true) }
            masks[key] = computed
        }
        let elapsed = ContinuousClock.now - started
        counters.withLock {
            $0.computed += 1
            $0.computeSeconds += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        }
        return computed
    }

    /// A state, and the highest completion cost its mask allows (nil: no budget).
    private struct MaskKey: Hashable {
        let state: GrammarState
        let limit: Int?
    }
}

/// Grammar states numbered as they are met, and each one's step on each byte once computed:
/// a deterministic automaton over bytes, built lazily (a grammar's states are unbounded in
/// general, but the ones an answer meets are few and recur).
struct ByteAutomaton {
    private var states: [GrammarState] = []
    private var ids: [GrammarState: Int32] = [:]
    /// 256 entries per state: the next state's id, -1 for a refused byte, -2 not yet computed.
    private var transitions: [Int32] = []
    /// Each state's completion cost once asked for (-1 before).
    private var costs: [Int] = []

    var stateCount: Int { states.count }
    /// States kept before the automaton starts again (a kilobyte of transitions each).
    static let capacity = 1 << 16

    mutating func id(of state: GrammarState) -> Int32 {
        if let id = ids[state] { return id }
        let id = Int32(states.count)
        states.append(state)
        ids[state] = id
        transitions.append(contentsOf: repeatElement(-2, count: 256))
        costs.append(-1)
        return id
    }

    func state(_ id: Int32) -> GrammarState { states[Int(id)] }

    /// `cost` of state `id`, computed once.
    mutating func cost(of id: Int32, _ cost: (GrammarState) -> Int) -> Int {
        if costs[Int(id)] < 0 { costs[Int(id)] = cost(states[Int(id)]) }
        return costs[Int(id)]
    }

    /// The state after `byte` from state `id`, or -1.
    mutating func next(_ id: Int32, _ byte: UInt8, grammar: CompiledGrammar) -> Int32 {
        let slot = Int(id) * 256 + Int(byte)
        let known = transitions[slot]
        if known != -2 { return known }
        var state = states[Int(id)]
        let next = state.step(byte, in: grammar) ? self.id(of: state) : -1
        transitions[slot] = next
        return next
    }
}

/// The text tokens' bytes as a trie, laid out breadth first so that a node's children are
/// consecutive (one pass over them reads neighbouring memory): node 0 is the root; node `n`'s
/// children are `childStart[n]..<childStart[n + 1]`, each reached by its `byte`, and the tokens
/// whose bytes end at `n` are `tokens[tokenStart[n]..<tokenStart[n + 1]]`.
struct TokenTrie: Sendable {
    var byte: [UInt8] = []
    var childStart: [Int32] = []
    var tokenStart: [Int32] = []
    var tokens: [Int32] = []

    init(_ table: TokenByteTable) {
        // Tokens sorted by their bytes build the trie in one pass (children in byte order),
        // which is then numbered breadth first.
        let text = (0..<Int32(table.vocabularySize)).filter { table.kinds[Int($0)] == .text }
        let sorted = table.bytes.withUnsafeBufferPointer { bytes in
            text.sorted { a, b in
                let x = bytes[Int(table.offsets[Int(a)])..<Int(table.offsets[Int(a) + 1])]
                let y = bytes[Int(table.offsets[Int(b)])..<Int(table.offsets[Int(b) + 1])]
                return x.lexicographicallyPrecedes(y)
            }
        }
        var built: (byte: [UInt8], children: [[Int32]], endsAt: [[Int32]]) = ([0], [[]], [[]])
        var path: [Int32] = [0]  // nodes of the previous token's bytes
        var previous: [UInt8] = []
        for token in sorted {
            let piece = Array(table.bytes[Int(table.offsets[Int(token)])..<Int(table.offsets[Int(token) + 1])])
            var shared = 0
            while shared < min(piece.count, previous.count) && piece[shared] == previous[shared] { shared += 1 }
            path.removeSubrange((shared + 1)...)
            for b in piece[shared...] {
                let node = Int32(built.byte.count)
                built.byte.append(b)
                built.children.append([])
                built.endsAt.append([])
                built.children[Int(path[path.count - 1])].append(node)
                path.append(node)
            }
            built.endsAt[Int(path[path.count - 1])].append(token)
            previous = piece
        }
        // Breadth-first numbering: a node's children get consecutive numbers, the first of them
        // one more than all the children of the nodes numbered before it.
        var order: [Int32] = [0]
        var head = 0
        while head < order.count {
            order += built.children[Int(order[head])]
            head += 1
        }
        byte.reserveCapacity(order.count)
        childStart.reserveCapacity(order.count + 1)
        tokenStart.reserveCapacity(order.count + 1)
        var nextChild: Int32 = 1
        for old in order {
            byte.append(built.byte[Int(old)])
            childStart.append(nextChild)
            nextChild += Int32(built.children[Int(old)].count)
            tokenStart.append(Int32(tokens.count))
            tokens += built.endsAt[Int(old)]
        }
        childStart.append(nextChild)
        tokenStart.append(Int32(tokens.count))
    }

    /// Sets in `mask` the bit of every text token whose bytes the state `start` of `automaton`
    /// takes (and whose state after them `keep` accepts): a depth-first walk that leaves a
    /// subtree as soon as its first byte is refused.
    func walk(from start: Int32, automaton: inout ByteAutomaton, grammar: CompiledGrammar, mask: UnsafeMutablePointer<UInt64>,
              keep: (inout ByteAutomaton, Int32) -> Bool = { _, _ in true }) {
        var stack: [(node: Int32, state: Int32)] = [(0, start)]
        stack.reserveCapacity(64)
        byte.withUnsafeBufferPointer { byte in
            childStart.withUnsafeBufferPointer { childStart in
                tokenStart.withUnsafeBufferPointer { tokenStart in
                    tokens.withUnsafeBufferPointer { tokens in
                        while let (node, s) = stack.popLast() {
                            for child in Int(childStart[Int(node)])..<Int(childStart[Int(node) + 1]) {
                                let t = automaton.next(s, byte[child], grammar: grammar)
                                guard t >= 0 else { continue }
                                if tokenStart[child] < tokenStart[child + 1], !keep(&automaton, t) {
                                    if childStart[child] < childStart[child + 1] { stack.append((Int32(child), t)) }
                                    continue
                                }
                                for i in Int(tokenStart[child])..<Int(tokenStart[child + 1]) {
                                    let token = tokens[i]
                                    mask[Int(token) >> 6] |= 1 << UInt64(token & 63)
                                }
                                if childStart[child] < childStart[child + 1] { stack.append((Int32(child), t)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A grammar that holds only from the first trigger on (llama.cpp's lazy grammars, which tool
/// calls use): the output is free text until it contains one of `triggers`; from the trigger's
/// first byte the grammar must match it. A token that completes a trigger is allowed only if
/// the grammar takes the text from the trigger to the token's end.
public struct LazyGrammarConstraint: OutputConstraint {
    public let triggers: [[UInt8]]
    /// The grammar, once a trigger has appeared.
    public private(set) var grammar: GrammarConstraint?
    private let program: GrammarProgram
    /// The free output so far (only its end matters, to find a trigger that spans tokens).
    private var tail: [UInt8] = []
    private let longestTrigger: Int

    public init(program: GrammarProgram, triggers: [String]) {
        self.program = program
        self.triggers = triggers.map { Array($0.utf8) }.filter { !$0.isEmpty }
        longestTrigger = self.triggers.map(\.count).max() ?? 0
    }

    /// Whether a trigger has appeared.
    public var isTriggered: Bool { grammar != nil }
    public var isComplete: Bool { grammar?.isComplete ?? false }
    /// Tokens left in the budget: the grammar keeps to it once triggered (free text does not).
    public var remainingTokens: Int? {
        didSet { grammar?.remainingTokens = remainingTokens }
    }

    /// The grammar's state after `bytes` when they complete a trigger, `.some(nil)` when they
    /// complete one the grammar refuses, nil when they complete none.
    private func triggered(by bytes: [UInt8]) -> GrammarConstraint?? {
        let text = tail + bytes
        var earliest: Int? = nil
        for trigger in triggers where text.count >= trigger.count {
            // Only a trigger ending inside the new bytes is new.
            let first = max(0, tail.count - trigger.count + 1)
            var i = first
            while i + trigger.count <= text.count {
                if text[i..<(i + trigger.count)].elementsEqual(trigger) {
                    earliest = min(earliest ?? i, i)
                    break
                }
                i += 1
            }
        }
        guard let start = earliest else { return nil }
        var constraint = GrammarConstraint(program: program)
        var state = constraint.state
        guard state.consume(text[start...], in: program.grammar) else { return .some(nil) }
        constraint = GrammarConstraint(program: program, state: state)
        return .some(constraint)
    }

    public func allows(_ token: Int32) -> Bool {
        if let grammar { return grammar.allows(token) }
        guard token >= 0, Int(token) < program.table.vocabularySize else { return false }
        guard program.table.kinds[Int(token)] == .text else { return program.table.kinds[Int(token)] == .end }
        if case .some(nil) = triggered(by: program.table.tokenBytes(token)) { return false }
        return true
    }

    public func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int) {
        if let grammar { return grammar.markAllowed(in: mask, vocabularySize: vocabularySize) }
        let table = program.table
        for token in 0..<min(vocabularySize, table.vocabularySize) {
            switch table.kinds[token] {
            case .excluded: continue
            case .end: break
            case .text:
                // Most tokens cannot complete a trigger; only those are checked against the grammar.
                let bytes = table.tokenBytes(Int32(token))
                if triggers.contains(where: { bytes.contains($0.last!) }), case .some(nil) = triggered(by: bytes) { continue }
            }
            mask[token >> 6] |= 1 << UInt64(token & 63)
        }
    }

    public mutating func accept(_ token: Int32, bytes: [UInt8]) -> Bool {
        if grammar != nil { return grammar!.accept(token) }
        switch triggered(by: bytes) {
        case .some(let started?):
            grammar = started
            grammar?.remainingTokens = remainingTokens
        case .some(nil):
            return false
        case nil:
            tail += bytes
            if tail.count > longestTrigger { tail.removeFirst(tail.count - longestTrigger) }
        }
        return true
    }
}
