/// An order for `BinaryHeap`: `precedes` is true when `a` must come out before `b`.
protocol HeapOrdered {
    static func precedes(_ a: Self, _ b: Self) -> Bool
}

/// A binary max-heap, the shape of `std::priority_queue`, which the merge loops of both
/// tokenizers are specified against.
struct BinaryHeap<Element: HeapOrdered> {
    private var items: [Element] = []

    var isEmpty: Bool { items.isEmpty }

    mutating func removeAll() { items.removeAll(keepingCapacity: true) }

    mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Element.precedes(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Element? {
        guard let last = items.popLast() else { return nil }
        guard !items.isEmpty else { return last }
        let top = items[0]
        items[0] = last
        var parent = 0
        let count = items.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            var best = left
            if right < count && Element.precedes(items[right], items[left]) { best = right }
            guard Element.precedes(items[best], items[parent]) else { break }
            items.swapAt(best, parent)
            parent = best
        }
        return top
    }
}
