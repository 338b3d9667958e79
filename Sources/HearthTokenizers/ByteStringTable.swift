/// Byte strings stored back to back in one buffer, found by content through an open-addressing
/// hash table. Lookups take a pointer and a length, so the tokenizers' inner loops look up
/// slices of the input without building a `String` or an `Array` for each candidate.
///
/// Entry `i` is the `i`-th string appended. When a string is appended twice the table finds
/// the later entry, as llama.cpp's `token_to_id` map keeps the last id it saw.
struct ByteStringTable: Sendable {
    private(set) var storage: [UInt8] = []
    private var starts: [Int32] = [0]
    /// Each slot holds the high 32 bits of its key's hash over the entry index, or `empty`.
    /// Comparing the hash bits first means a probe rarely touches `storage`.
    private var slots: [UInt64]
    private var mask: Int
    private static let empty = UInt64.max

    init(expectedCount: Int, expectedBytes: Int = 0) {
        var capacity = 16
        while capacity < expectedCount * 2 { capacity <<= 1 }
        slots = Array(repeating: Self.empty, count: capacity)
        mask = capacity - 1
        storage.reserveCapacity(expectedBytes)
        starts.reserveCapacity(expectedCount + 1)
    }

    /// A table of `strings`, entry `i` being `strings[i]`, with room for `extraCapacity` more.
    init(_ strings: [String], extraCapacity: Int = 0) {
        self.init(expectedCount: strings.count + extraCapacity, expectedBytes: strings.count * 8)
        var hashes: [UInt64] = []
        hashes.reserveCapacity(strings.count)
        for string in strings {
            string.withUTF8Bytes { bytes in
                hashes.append(Self.hash(bytes, Self.none))
                storage.append(contentsOf: bytes)
            }
            starts.append(Int32(storage.count))
        }
        for (index, hash) in hashes.enumerated() {
            let slot = storage.withUnsafeBufferPointer { store in
                probe(UnsafeBufferPointer(rebasing: store[Int(starts[index])..<Int(starts[index + 1])]), Self.none,
                      hash: hash)
            }
            slots[slot.index] = (hash & 0xFFFF_FFFF_0000_0000) | UInt64(UInt32(index))
        }
    }

    /// An empty second piece.
    static var none: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: nil, count: 0) }

    /// Number of entries.
    var count: Int { starts.count - 1 }

    /// The bytes of entry `index`.
    func bytes(of index: Int) -> ArraySlice<UInt8> {
        storage[Int(starts[index])..<Int(starts[index + 1])]
    }

    /// Adds `bytes` as a new entry and returns its index.
    @discardableResult
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        append(bytes, Self.none)
    }

    /// Adds the concatenation `first + second` as a new entry and returns its index.
    @discardableResult
    mutating func append(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Int32 {
        if (count + 1) * 2 > slots.count { grow() }
        let index = Int32(count)
        let hash = Self.hash(first, second)
        // A later duplicate takes over the slot of the earlier one.
        let slot = probe(first, second, hash: hash)
        storage.append(contentsOf: first)
        if !second.isEmpty { storage.append(contentsOf: second) }
        starts.append(Int32(storage.count))
        slots[slot.index] = (hash & 0xFFFF_FFFF_0000_0000) | UInt64(UInt32(index))
        return index
    }

    /// Index of the entry equal to `bytes`, or nil.
    @inline(__always)
    func find(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        find(bytes, Self.none)
    }

    /// Index of the entry equal to `bytes[range]`, or nil.
    @inline(__always)
    func find(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int32? {
        find(UnsafeBufferPointer(rebasing: bytes[range]))
    }

    /// Index of the entry equal to the concatenation `first + second`, or nil.
    func find(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Int32? {
        let slot = probe(first, second, hash: Self.hash(first, second))
        return slot.found ? Int32(truncatingIfNeeded: slots[slot.index]) : nil
    }

    /// The slot holding the key, or the empty slot where it would go.
    private func probe(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>,
                       hash: UInt64) -> (index: Int, found: Bool) {
        let tag = hash & 0xFFFF_FFFF_0000_0000
        let length = first.count + second.count
        return slots.withUnsafeBufferPointer { slots in
            starts.withUnsafeBufferPointer { starts in
                storage.withUnsafeBufferPointer { store in
                    var slot = Int(truncatingIfNeeded: hash) & mask
                    while true {
                        let value = slots[slot]
                        if value == Self.empty { return (slot, false) }
                        if value & 0xFFFF_FFFF_0000_0000 == tag {
                            let entry = Int(UInt32(truncatingIfNeeded: value))
                            let start = Int(starts[entry])
                            if Int(starts[entry + 1]) - start == length
                                && Self.equal(store.baseAddress! + start, first, second) {
                                return (slot, true)
                            }
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func equal(_ stored: UnsafePointer<UInt8>, _ first: UnsafeBufferPointer<UInt8>,
                              _ second: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = stored
        for byte in first {
            if at.pointee != byte { return false }
            at += 1
        }
        for byte in second {
            if at.pointee != byte { return false }
            at += 1
        }
        return true
    }

    // FNV-1a, which streams over two pieces without joining them, then a multiply-xorshift so
    // that both the slot bits (low) and the tag bits (high) depend on every byte.
    @inline(__always)
    private static func hash(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in first { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        for byte in second { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        h ^= h >> 32
        h &*= 0xd6e8_feb8_6659_fd93
        return h ^ (h >> 32)
    }

    private mutating func grow() {
        let capacity = slots.count * 2
        let old = slots
        slots = Array(repeating: Self.empty, count: capacity)
        mask = capacity - 1
        // Rehash from the stored bytes, oldest first, so that later duplicates still win.
        var live = Set<UInt32>()
        for value in old where value != Self.empty { live.insert(UInt32(truncatingIfNeeded: value)) }
        for index in live.sorted() {
            let start = Int(starts[Int(index)]), end = Int(starts[Int(index) + 1])
            storage.withUnsafeBufferPointer { store in
                let key = UnsafeBufferPointer(rebasing: store[start..<end])
                let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
                let hash = Self.hash(key, empty)
                var slot = Int(truncatingIfNeeded: hash) & mask
                while slots[slot] != Self.empty { slot = (slot + 1) & mask }
                slots[slot] = (hash & 0xFFFF_FFFF_0000_0000) | UInt64(index)
            }
        }
    }
}

extension String {
    /// Calls `body` with the string's UTF-8 bytes, without copying a native string.
    @inline(__always)
    func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        var copy = self
        return try copy.withUTF8(body)
    }
}
