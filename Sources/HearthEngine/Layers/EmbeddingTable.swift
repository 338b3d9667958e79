/// A table of learned rows (tokens, segment types, or absolute positions: BERT's and Whisper's
/// positions, beside RoPE's rotations and the none of a model without positions): row `i` is
/// `width` floats at `table + i * width`.
struct EmbeddingTable: @unchecked Sendable {
    let table: UnsafePointer<Float>
    let count: Int
    let width: Int

    /// `row = table[i]`.
    func copy(_ i: Int, into row: UnsafeMutablePointer<Float>) {
        row.update(from: table + i * width, count: width)
    }

    /// `row += table[i]`.
    func add(_ i: Int, to row: UnsafeMutablePointer<Float>) {
        let source = table + i * width
        for j in 0..<width { row[j] += source[j] }
    }
}
