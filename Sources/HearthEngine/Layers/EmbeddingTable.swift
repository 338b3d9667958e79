/// A table of learned rows (tokens, segment types, or absolute positions: BERT's and Whisper's
/// positions, beside RoPE's rotations and the none of a model without positions): row `i` is
/// `width` floats at `table + i * width`.
package struct EmbeddingTable: @unchecked Sendable {
    let table: UnsafePointer<Float>
    let count: Int
    let width: Int
    /// The rows when the table holds them itself rather than pointing into a model's weights.
    private let storage: FloatBuffer?

    /// A table over rows that someone else keeps alive (an encoder's loaded weights).
    init(table: UnsafePointer<Float>, count: Int, width: Int) {
        (self.table, self.count, self.width, storage) = (table, count, width, nil)
    }

    /// A table holding a copy of `rows`, (count, width).
    package init(_ rows: [Float], width: Int) {
        precondition(width > 0 && rows.count % width == 0, "a table's rows are whole rows of its width")
        let storage = FloatBuffer(rows.count)
        storage.pointer.update(from: rows, count: rows.count)
        (table, count, self.width, self.storage) = (UnsafePointer(storage.pointer), rows.count / width, width, storage)
    }

    /// `row = table[i]`.
    func copy(_ i: Int, into row: UnsafeMutablePointer<Float>) {
        row.update(from: table + i * width, count: width)
    }

    /// `row += table[i]`.
    package func add(_ i: Int, to row: UnsafeMutablePointer<Float>) {
        let source = table + i * width
        for j in 0..<width { row[j] += source[j] }
    }
}
