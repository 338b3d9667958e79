import CHearthKernels

/// Hints to the memory system.
public enum CacheHint {
    /// Asks the caches for `count` bytes from `pointer`, one line at a time. A hint only: it
    /// never faults (any address is fine) and does not wait for the bytes.
    @inline(__always)
    public static func prefetch(_ pointer: UnsafeRawPointer, count: Int) {
        hk_prefetch(pointer, count)
    }
}
