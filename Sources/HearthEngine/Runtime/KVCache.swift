import HearthKernels

/// Keys and values of every position of one sequence, per layer, in half precision (as
/// llama.cpp keeps them by default).
///
/// Each key/value head's positions lie one after another (layer, head, position, dimension),
/// so that attention reads one head's keys and values as one run of memory. With heads side by
/// side in a position's row (8 key/value heads of 64 halves, 1 KB a position), a head's 128
/// bytes every kilobyte fall in one eighth of the cache's sets, and a deep context's head no
/// longer stays in L2.
///
/// Memory is reserved for the whole context but pages are touched only as positions fill, so
/// a long context costs address space, not resident memory, until it is used.
final class KVCache: @unchecked Sendable {
    let layers: Int
    let heads: Int
    let headDimension: Int
    let capacity: Int       // positions
    let keys: UnsafeMutablePointer<UInt16>     // (layers, heads, capacity, headDimension)
    let values: UnsafeMutablePointer<UInt16>   // (layers, heads, capacity, headDimension)

    init(layers: Int, heads: Int, headDimension: Int, capacity: Int) {
        self.layers = layers
        self.heads = heads
        self.headDimension = headDimension
        self.capacity = capacity
        let count = layers * heads * capacity * headDimension
        keys = .allocate(capacity: max(count, 1))
        values = .allocate(capacity: max(count, 1))
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Halves of one position's keys (every head).
    var width: Int { heads * headDimension }

    /// Halves from one head's position to the next head's same position.
    var headStride: Int { capacity * headDimension }

    /// Keys of `layer`'s head `head` at `position` (headDimension halves; the next position
    /// follows, the next head `headStride` halves on).
    func keys(layer: Int, head: Int = 0, position: Int) -> UnsafeMutablePointer<UInt16> {
        keys + ((layer * heads + head) * capacity + position) * headDimension
    }

    /// Values of `layer`'s head `head` at `position`.
    func values(layer: Int, head: Int = 0, position: Int) -> UnsafeMutablePointer<UInt16> {
        values + ((layer * heads + head) * capacity + position) * headDimension
    }

    /// Stores one position's key and value (every head side by side), given as floats.
    func store(layer: Int, position: Int, key: UnsafePointer<Float>, value: UnsafePointer<Float>) {
        for head in 0..<heads {
            Activations.toHalf(key + head * headDimension, keys(layer: layer, head: head, position: position), count: headDimension)
            Activations.toHalf(value + head * headDimension, values(layer: layer, head: head, position: position), count: headDimension)
        }
    }

    /// Copies the first `count` positions of every layer into `other`.
    func copyPrefix(_ count: Int, to other: KVCache) {
        precondition(other.layers == layers && other.heads == heads && other.headDimension == headDimension
                     && count <= min(capacity, other.capacity))
        for layer in 0..<layers {
            for head in 0..<heads {
                other.keys(layer: layer, head: head, position: 0).update(from: keys(layer: layer, head: head, position: 0), count: count * headDimension)
                other.values(layer: layer, head: head, position: 0).update(from: values(layer: layer, head: head, position: 0), count: count * headDimension)
            }
        }
    }
}
