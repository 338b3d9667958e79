import HearthKernels

/// Keys and values of every position of one sequence, per layer, in half precision (as
/// llama.cpp keeps them by default).
///
/// Memory is reserved for the whole context but pages are touched only as positions fill, so
/// a long context costs address space, not resident memory, until it is used.
final class KVCache: @unchecked Sendable {
    let layers: Int
    let width: Int          // kvHeads * headDim
    let capacity: Int       // positions
    let keys: UnsafeMutablePointer<UInt16>     // (layers, capacity, width)
    let values: UnsafeMutablePointer<UInt16>   // (layers, capacity, width)

    init(layers: Int, width: Int, capacity: Int) {
        self.layers = layers
        self.width = width
        self.capacity = capacity
        let count = layers * capacity * width
        keys = .allocate(capacity: count)
        values = .allocate(capacity: count)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Keys of `layer` at `position` (width halves; the next position follows).
    func keys(layer: Int, position: Int) -> UnsafeMutablePointer<UInt16> {
        keys + (layer * capacity + position) * width
    }

    /// Values of `layer` at `position`.
    func values(layer: Int, position: Int) -> UnsafeMutablePointer<UInt16> {
        values + (layer * capacity + position) * width
    }

    /// Stores one position's key and value, given as floats.
    func store(layer: Int, position: Int, key: UnsafePointer<Float>, value: UnsafePointer<Float>) {
        Activations.toHalf(key, keys(layer: layer, position: position), count: width)
        Activations.toHalf(value, values(layer: layer, position: position), count: width)
    }

    /// Copies the first `count` positions of every layer into `other`.
    func copyPrefix(_ count: Int, to other: KVCache) {
        precondition(other.layers == layers && other.width == width && count <= min(capacity, other.capacity))
        for layer in 0..<layers {
            other.keys(layer: layer, position: 0).update(from: keys(layer: layer, position: 0), count: count * width)
            other.values(layer: layer, position: 0).update(from: values(layer: layer, position: 0), count: count * width)
        }
    }
}
