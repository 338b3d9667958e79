/// Selection of the few best tokens by logit in one pass over the vocabulary, for a small top-k
/// and top logprobs: a heap of k whose root, the worst kept, rejects most tokens with one
/// comparison. "Better" is a total order: higher value first, lower token id on ties.
enum TopSelection {
    @inline(__always)
    static func isBetter(_ a: Int32, than b: Int32, _ values: UnsafePointer<Float>) -> Bool {
        let va = values[Int(a)], vb = values[Int(b)]
        return va > vb || (va == vb && a < b)
    }

    /// Writes the best `k` tokens of the vocabulary with finite values to `ids[0..<result]`,
    /// best first; the result is less than `k` only when fewer tokens are finite.
    static func selectFromVocabulary(_ k: Int, values: UnsafePointer<Float>, count n: Int,
                                     into ids: UnsafeMutablePointer<Int32>) -> Int {
        guard k > 0 else { return 0 }
        var size = 0
        var worst = -Float.infinity
        for i in 0..<n {
            let v = values[i]
            guard v.isFinite else { continue }
            if size < k {
                ids[size] = Int32(i)
                size += 1
                siftUp(size - 1, ids, values)
                if size == k { worst = values[Int(ids[0])] }
            } else if v > worst {
                // Ties with the worst kept token lose: they come later, so their ids are higher.
                ids[0] = Int32(i)
                siftDown(0, size, ids, values)
                worst = values[Int(ids[0])]
            }
        }
        sortBestFirst(ids, size, values)
        return size
    }

    /// `selectFromVocabulary` among the tokens worse than `after` (all of them when nil): the
    /// next `k` in the order, for walking the vocabulary best first a batch at a time.
    static func selectFromVocabulary(_ k: Int, values: UnsafePointer<Float>, count n: Int,
                                     after: (value: Float, id: Int32)?,
                                     into ids: UnsafeMutablePointer<Int32>) -> Int {
        guard let after else { return selectFromVocabulary(k, values: values, count: n, into: ids) }
        return select(k, values: values, count: n, into: ids) { i, v in
            v < after.value || (v == after.value && Int32(i) > after.id)
        }
    }

    /// `selectFromVocabulary` among the tokens whose bit is set in `allowed` (bit `t % 64` of
    /// word `t / 64`), for constrained sampling.
    static func selectFromVocabulary(_ k: Int, values: UnsafePointer<Float>, count n: Int,
                                     allowed: UnsafeBufferPointer<UInt64>, into ids: UnsafeMutablePointer<Int32>) -> Int {
        select(k, values: values, count: n, into: ids) { i, _ in allowed[i >> 6] & (1 << UInt64(i & 63)) != 0 }
    }

    @inline(__always)
    private static func select(_ k: Int, values: UnsafePointer<Float>, count n: Int, into ids: UnsafeMutablePointer<Int32>,
                               where include: (Int, Float) -> Bool) -> Int {
        guard k > 0 else { return 0 }
        var size = 0
        var worst = -Float.infinity
        for i in 0..<n {
            let v = values[i]
            guard v.isFinite, size < k || v > worst, include(i, v) else { continue }
            if size < k {
                ids[size] = Int32(i)
                size += 1
                siftUp(size - 1, ids, values)
                if size == k { worst = values[Int(ids[0])] }
            } else {
                // Ties with the worst kept token lose: they come later, so their ids are higher.
                ids[0] = Int32(i)
                siftDown(0, size, ids, values)
                worst = values[Int(ids[0])]
            }
        }
        sortBestFirst(ids, size, values)
        return size
    }

    /// Heapsort of a heap whose root is the worst: popping the worst to the back leaves the
    /// buffer best first, with no allocation.
    private static func sortBestFirst(_ ids: UnsafeMutablePointer<Int32>, _ size: Int, _ values: UnsafePointer<Float>) {
        var end = size
        while end > 1 {
            end -= 1
            ids.swapAt(0, end)
            siftDown(0, end, ids, values)
        }
    }

    @inline(__always)
    private static func siftUp(_ start: Int, _ ids: UnsafeMutablePointer<Int32>, _ values: UnsafePointer<Float>) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard isBetter(ids[parent], than: ids[child], values) else { return }
            ids.swapAt(parent, child)
            child = parent
        }
    }

    @inline(__always)
    private static func siftDown(_ start: Int, _ size: Int, _ ids: UnsafeMutablePointer<Int32>, _ values: UnsafePointer<Float>) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < size else { return }
            var worse = left
            let right = left + 1
            if right < size, isBetter(ids[left], than: ids[right], values) { worse = right }
            guard isBetter(ids[parent], than: ids[worse], values) else { return }
            ids.swapAt(parent, worse)
            parent = worse
        }
    }
}

extension UnsafeMutablePointer {
    @inline(__always)
    fileprivate func swapAt(_ i: Int, _ j: Int) {
        let t = self[i]
        self[i] = self[j]
        self[j] = t
    }
}
