/// Byte strings stored back to back in one buffer, found by content through an open-addressing
/// hash table. Lookups take a pointer and a length, so the tokenizers' inner loops look up
/// slices of the input without building a `String` or an `Array` for each candidate.
///
/// Entry `i` is the `i`-th string appended. When a string is appended twice the table finds
/// the later entry, as llama.cpp's `token_to_id` map keeps the last id it saw.
struct ByteStringTable: Sendable {
    private(set) var storage: [UInt8] = []
    private(set) var starts: [Int] = [0]
    private var slots: [Int32]
    private var mask: Int

    init(expectedCount: Int, expectedBytes: Int = 0) {
        var capacity = 16
        while capacity < expectedCount * 2 { capacity <<= 1 }
        slots = Array(repeating: -1, count: capacity)
        mask = capacity - 1
        storage.reserveCapacity(expectedBytes)
        starts.reserveCapacity(expectedCount + 1)
    }

    /// Number of entries.
    var count: Int { starts.count - 1 }

    /// The bytes of entry `index`.
    func bytes(of index: Int) -> ArraySlice<UInt8> {
        storage[starts[index]..<starts[index + 1]]
    }

    /// Adds `bytes` as a new entry and returns its index.
    @discardableResult
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        if (count + 1) * 2 > slots.count { grow() }
        let index = Int32(count)
        storage.append(contentsOf: bytes)
        starts.append(storage.count)
        insertSlot(for: index, hash: Self.hash(bytes, UnsafeBufferPointer(start: nil, count: 0)))
        return index
    }

    /// Adds the concatenation `first + second` as a new entry and returns its index.
    mutating func append(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Int32 {
        if (count + 1) * 2 > slots.count { grow() }
        let index = Int32(count)
        storage.append(contentsOf: first)
        storage.append(contentsOf: second)
        starts.append(storage.count)
        insertSlot(for: index, hash: Self.hash(first, second))
        return index
    }

    /// Index of the entry equal to `bytes`, or nil.
    func find(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        find(bytes, UnsafeBufferPointer(start: nil, count: 0))
    }

    /// Index of the entry equal to the concatenation `first + second`, or nil.
    func find(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Int32? {
        let length = first.count + second.count
        var slot = Int(truncatingIfNeeded: Self.hash(first, second)) & mask
        return storage.withUnsafeBufferPointer { store in
            starts.withUnsafeBufferPointer { starts in
                slots.withUnsafeBufferPointer { slots in
                    while true {
                        let entry = slots[slot]
                        if entry < 0 { return nil }
                        let start = starts[Int(entry)]
                        if starts[Int(entry) + 1] - start == length
                            && Self.equal(store, start, first, second) {
                            return entry
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    /// Index of the entry equal to `bytes[range]`.
    func find(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int32? {
        find(UnsafeBufferPointer(rebasing: bytes[range]))
    }

    private static func equal(_ store: UnsafeBufferPointer<UInt8>, _ start: Int,
                              _ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = start
        for byte in first {
            if store[at] != byte { return false }
            at += 1
        }
        for byte in second {
            if store[at] != byte { return false }
            at += 1
        }
        return true
    }

    // FNV-1a: short keys, byte at a time, and it streams over two pieces without copying them.
    private static func hash(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in first { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        for byte in second { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        // Fold the high bits in: the slot index uses only the low ones.
        return h ^ (h >> 29)
    }

    private mutating func insertSlot(for index: Int32, hash: UInt64) {
        let start = starts[Int(index)], end = starts[Int(index) + 1]
        var slot = Int(truncatingIfNeeded: hash) & mask
        storage.withUnsafeBufferPointer { store in
            let key = UnsafeBufferPointer(rebasing: store[start..<end])
            slots.withUnsafeMutableBufferPointer { slots in
                while true {
                    let entry = slots[slot]
                    if entry < 0 {
                        slots[slot] = index
                        return
                    }
                    let other = starts[Int(entry)]
                    if starts[Int(entry) + 1] - other == key.count
                        && Self.equal(store, other, key, UnsafeBufferPointer(start: nil, count: 0)) {
                        slots[slot] = index  // a later duplicate replaces the earlier one
                        return
                    }
                    slot = (slot + 1) & mask
                }
            }
        }
    }

    private mutating func grow() {
        let capacity = slots.count * 2
        slots = Array(repeating: -1, count: capacity)
        mask = capacity - 1
        for index in 0..<count {
            let start = starts[index], end = starts[index + 1]
            let h = storage.withUnsafeBufferPointer {
                Self.hash(UnsafeBufferPointer(rebasing: $0[start..<end]), UnsafeBufferPointer(start: nil, count: 0))
            }
            insertSlot(for: Int32(index), hash: h)
        }
    }
}

extension String {
    /// Calls `body` with the string's UTF-8 bytes, without copying a native string.
    func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        var copy = self
        return try copy.withUTF8(body)
    }
}
