import HearthConstraints

/// An Earley recognizer over a `Grammar`: a second, independent way to decide whether a text
/// matches a grammar, for checking the pushdown recognizer and the constrained sampler. Slow
/// (chart parsing) but simple and complete for any grammar, left recursion included.
public struct EarleyRecognizer {
    let grammar: Grammar

    public init(_ grammar: Grammar) { self.grammar = grammar }

    private struct Item: Hashable {
        let rule: Int, alternative: Int, dot: Int, origin: Int
    }

    /// Whether the whole of `text` matches the root rule.
    public func matches(_ text: String) -> Bool {
        chart(text).complete
    }

    /// Whether `text` is the beginning of a match (some item has read all of it).
    public func isPrefix(_ text: String) -> Bool {
        chart(text).prefix
    }

    private func chart(_ text: String) -> (complete: Bool, prefix: Bool) {
        let input = text.unicodeScalars.map(\.value)
        var sets: [[Item]] = Array(repeating: [], count: input.count + 1)
        var seen: [Set<Item>] = Array(repeating: [], count: input.count + 1)
        func add(_ item: Item, _ k: Int) {
            if seen[k].insert(item).inserted { sets[k].append(item) }
        }
        for a in grammar.rules[grammar.root].alternatives.indices { add(Item(rule: grammar.root, alternative: a, dot: 0, origin: 0), 0) }
        for k in 0...input.count {
            var i = 0
            while i < sets[k].count {
                let item = sets[k][i]
                i += 1
                let sequence = grammar.rules[item.rule].alternatives[item.alternative]
                if item.dot == sequence.count {
                    // Complete: advance every item in the origin set waiting for this rule.
                    var j = 0
                    while j < sets[item.origin].count {
                        let waiting = sets[item.origin][j]
                        j += 1
                        let s = grammar.rules[waiting.rule].alternatives[waiting.alternative]
                        if waiting.dot < s.count, case .rule(let r) = s[waiting.dot], r == item.rule {
                            add(Item(rule: waiting.rule, alternative: waiting.alternative, dot: waiting.dot + 1, origin: waiting.origin), k)
                        }
                    }
                    continue
                }
                switch sequence[item.dot] {
                case .rule(let r):
                    for a in grammar.rules[r].alternatives.indices { add(Item(rule: r, alternative: a, dot: 0, origin: k), k) }
                    // A rule already completed empty at k (nullable) advances this item at once.
                    if seen[k].contains(where: { $0.rule == r && $0.origin == k
                        && $0.dot == grammar.rules[r].alternatives[$0.alternative].count }) {
                        add(Item(rule: item.rule, alternative: item.alternative, dot: item.dot + 1, origin: item.origin), k)
                    }
                case .characters(let cls):
                    if k < input.count && cls.matches(input[k]) {
                        add(Item(rule: item.rule, alternative: item.alternative, dot: item.dot + 1, origin: item.origin), k + 1)
                    }
                case .token:
                    continue
                }
            }
        }
        let complete = sets[input.count].contains { $0.rule == grammar.root && $0.origin == 0
            && $0.dot == grammar.rules[grammar.root].alternatives[$0.alternative].count }
        return (complete, !sets[input.count].isEmpty)
    }
}
