import HearthKernels

/// The scratch of a forward pass, sized by its rows and owned by the model: passes take turns,
/// so one set serves every sequence. Buffers grow to the largest pass seen and are then reused.
final class Workspace: @unchecked Sendable {
    /// What a float buffer holds during a pass.
    enum Slot: Int, CaseIterable {
        case residual       // (rows, dim) the stream every block adds into
        case normed         // (rows, dim) a norm's output, the input of a projection
        case qkv            // (rows, qWidth + 2 * kvWidth)
        case attention      // (rows, qWidth) attention output before its projection
        case blockOutput    // (rows, dim) a block's output before the residual add
        case gateUp         // (rows, 2 * ffn)
        case hidden         // (rows, ffn)
        case scores         // (threads, positions) attention weights
        case router         // (rows, experts)
        case expertInput    // (rows routed to one expert, dim)
        case expertOutput   // (rows, used experts, dim)
        case expertProjected // (rows routed to one expert, dim)
        case logits         // (rows wanting logits, vocab)
        case logitInput     // (rows wanting logits, dim)
        case projected      // (rows, a layer's projections before they are split)
        case gate           // (rows, a layer's output gates)
        case layerInputs    // (rows, blocks, width) Gemma 4's per-layer inputs
    }

    private var buffers: [FloatBuffer?] = Array(repeating: nil, count: Slot.allCases.count)
    private var tables: [ObjectIdentifier: FloatBuffer] = [:]
    private var quantized: [Int: QuantizedActivations] = [:]
    /// The order the model's products read their weights in.
    let readOrder = ReadOrder()

    /// A buffer of at least `count` floats for `slot`. Its contents survive as long as the slot is
    /// asked for with no larger count; a larger one gives a new, uninitialised buffer.
    func floats(_ slot: Slot, _ count: Int) -> UnsafeMutablePointer<Float> {
        if let buffer = buffers[slot.rawValue], buffer.count >= count { return buffer.pointer }
        let buffer = FloatBuffer(count)
        buffers[slot.rawValue] = buffer
        return buffer.pointer
    }

    /// A buffer of at least `count` floats for a table computed once per pass, such as a RoPE
    /// table, by the object that computes it.
    func table(_ key: ObjectIdentifier, _ count: Int) -> UnsafeMutablePointer<Float> {
        if let buffer = tables[key], buffer.count >= count { return buffer.pointer }
        let buffer = FloatBuffer(count)
        tables[key] = buffer
        return buffer.pointer
    }

    /// Room for `rows` activation rows of `columns` floats converted to the kernels' formats.
    func quantized(columns: Int, rows: Int) -> QuantizedActivations {
        if let existing = quantized[columns], existing.capacity >= rows { return existing }
        let fresh = QuantizedActivations(columns: columns, capacity: rows)
        quantized[columns] = fresh
        return fresh
    }
}
