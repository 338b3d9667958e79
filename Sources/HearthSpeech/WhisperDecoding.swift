import Foundation

extension WhisperModel {
    /// The state of decoding over one window: the encoder's keys and values for each layer's
    /// cross-attention, which every sequence shares, and each sequence's self-attention cache.
    /// Beam search and best-of sampling run several sequences over one window; `reorder`
    /// follows the beams.
    public final class Decoding: @unchecked Sendable {
        /// Per layer, (2 width, audioContext): the keys' features, then the values', each a row
        /// over the audio positions.
        let cross: [[Float]]
        let layers: Int, positions: Int, width: Int
        private(set) var caches: [SequenceCache]

        init(cross: [[Float]], layers: Int, positions: Int, width: Int) {
            self.cross = cross
            self.layers = layers
            self.positions = positions
            self.width = width
            caches = [SequenceCache(layers: layers, positions: positions, width: width)]
        }

        /// Sequences over the window.
        public var sequenceCount: Int { caches.count }

        /// Tokens sequence `sequence` has evaluated.
        public func length(of sequence: Int = 0) -> Int { caches[sequence].length }

        /// Forgets the tokens of `sequence` after its first `count` (they will be evaluated again).
        public func truncate(_ sequence: Int = 0, to count: Int) {
            caches[sequence].length = min(caches[sequence].length, count)
        }

        /// Adds an empty sequence and returns its index.
        public func appendSequence() -> Int {
            caches.append(SequenceCache(layers: layers, positions: positions, width: width))
            return caches.count - 1
        }

        /// `count` sequences, each a copy of what sequence `source` holds now.
        public func replicate(_ source: Int, count: Int) {
            reorder(Array(repeating: source, count: count))
        }

        /// Sequence `i` becomes what sequence `origins[i]` holds now. A sequence that stays
        /// where it is, or is the first to take an origin, is not copied.
        public func reorder(_ origins: [Int]) {
            precondition(origins.allSatisfy { caches.indices.contains($0) })
            var result = [SequenceCache?](repeating: nil, count: origins.count)
            var taken = [Bool](repeating: false, count: caches.count)
            for (i, origin) in origins.enumerated() where i == origin {
                result[i] = caches[origin]
                taken[origin] = true
            }
            for (i, origin) in origins.enumerated() where result[i] == nil && !taken[origin] {
                result[i] = caches[origin]
                taken[origin] = true
            }
            var spare = caches.indices.filter { !taken[$0] }.map { caches[$0] }
            for (i, origin) in origins.enumerated() where result[i] == nil {
                let copy = spare.popLast() ?? SequenceCache(layers: layers, positions: positions, width: width)
                copy.copy(from: caches[origin])
                result[i] = copy
            }
            caches = result.map { $0! }
        }
    }

    /// One sequence's keys and values for each decoder layer, (textContext, width) each.
    final class SequenceCache {
        let keys: [UnsafeMutablePointer<Float>]
        let values: [UnsafeMutablePointer<Float>]
        let width: Int
        var length = 0

        init(layers: Int, positions: Int, width: Int) {
            self.width = width
            keys = (0..<layers).map { _ in .allocate(capacity: positions * width) }
            values = (0..<layers).map { _ in .allocate(capacity: positions * width) }
        }

        deinit {
            keys.forEach { $0.deallocate() }
            values.forEach { $0.deallocate() }
        }

        func copy(from other: SequenceCache) {
            for l in keys.indices {
                keys[l].update(from: other.keys[l], count: other.length * width)
                values[l].update(from: other.values[l], count: other.length * width)
            }
            length = other.length
        }
    }

    /// The cross-attention weights of chosen heads, kept while tokens are decoded: for each
    /// decoded row and head, `exp(score − max)` over the encoder's positions (a softmax before
    /// its normalization, so that any leading span of positions can be normalized on its own).
    public final class CrossAttentionCapture: @unchecked Sendable {
        /// (decoder layer, head) pairs.
        public let heads: [(layer: Int, head: Int)]
        let positions: Int
        /// (rows, heads, positions).
        private var storage: UnsafeMutablePointer<Float>
        private var capacity: Int
        public private(set) var rows = 0

        public init(heads: [(layer: Int, head: Int)], positions: Int) {
            self.heads = heads
            self.positions = positions
            capacity = 64
            storage = .allocate(capacity: capacity * max(1, heads.count) * positions)
        }

        deinit { storage.deallocate() }

        /// The weights of `row` for the head at `headIndex` in `heads`.
        public func weights(row: Int, headIndex: Int) -> UnsafeBufferPointer<Float> {
            precondition(row < rows && headIndex < heads.count)
            return UnsafeBufferPointer(start: storage + (row * heads.count + headIndex) * positions, count: positions)
        }

        /// Room for `count` more rows (zeros); returns the first new row.
        func append(rows count: Int) -> Int {
            let first = rows, size = max(1, heads.count) * positions
            if rows + count > capacity {
                let larger = max(2 * capacity, rows + count)
                let grown = UnsafeMutablePointer<Float>.allocate(capacity: larger * size)
                grown.update(from: storage, count: rows * size)
                storage.deallocate()
                storage = grown
                capacity = larger
            }
            (storage + rows * size).initialize(repeating: 0, count: count * size)
            rows += count
            return first
        }

        /// Keeps `weights` (`positions` floats) for `row` when (`layer`, `head`) is one of `heads`.
        func keep(_ weights: UnsafePointer<Float>, layer: Int, head: Int, row: Int) {
            guard let index = heads.firstIndex(where: { $0.layer == layer && $0.head == head }) else { return }
            (storage + (row * heads.count + index) * positions).update(from: weights, count: positions)
        }
    }
}
