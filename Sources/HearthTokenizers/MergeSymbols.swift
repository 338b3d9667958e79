/// A word's symbols while adjacent pairs merge, as llama.cpp keeps them (`llm_symbol`) for
/// both BPE and SentencePiece: an array in text order, linked both ways, where a symbol merged
/// into its left neighbour keeps its place with length 0.
struct MergeSymbols {
    struct Symbol {
        /// Where its bytes start in the word, and how many.
        var start: Int32
        var length: Int32
        /// The symbols before and after it; -1 at either end.
        var prev: Int32
        var next: Int32
    }

    private(set) var items: [Symbol] = []

    var count: Int { items.count }

    subscript(index: Int32) -> Symbol { items[Int(index)] }

    mutating func removeAll() { items.removeAll(keepingCapacity: true) }

    /// Appends the symbol of `length` bytes at `start`; `isLast` ends the list with it.
    mutating func append(start: Int, length: Int, isLast: Bool) {
        let index = Int32(items.count)
        items.append(Symbol(start: Int32(start), length: Int32(length), prev: index - 1, next: isLast ? -1 : index + 1))
    }

    /// Merges `right` into `left`, the symbol before it; returns the symbol now after `left`
    /// (-1 at the end).
    mutating func merge(_ left: Int32, _ right: Int32) -> Int32 {
        items[Int(left)].length += items[Int(right)].length
        items[Int(right)].length = 0
        let after = items[Int(right)].next
        items[Int(left)].next = after
        if after >= 0 { items[Int(after)].prev = left }
        return after
    }
}
