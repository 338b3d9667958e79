/// How an encoder's token states become one vector per sequence (sentence-transformers' Pooling
/// module), and the length-1 scaling of its Normalize module.
public enum TokenPooling: String, Sendable {
    /// The mean of the token states.
    case mean
    /// The state of the first token ([CLS]).
    case cls
    /// The element-wise maximum of the token states.
    case max

    /// The vector of one sequence whose `count` token states (rows of `width`) start at row
    /// `row` of `states`, scaled to length 1 when `normalized`.
    func callAsFunction(_ states: [Float], from row: Int, count: Int, width d: Int, normalized: Bool) -> [Float] {
        var vector = [Float](repeating: 0, count: d)
        switch self {
        case .cls:
            for j in 0..<d { vector[j] = states[row * d + j] }
        case .mean:
            for t in row..<row + count { for j in 0..<d { vector[j] += states[t * d + j] } }
            for j in 0..<d { vector[j] /= Float(count) }
        case .max:
            for j in 0..<d { vector[j] = -.infinity }
            for t in row..<row + count { for j in 0..<d { vector[j] = Swift.max(vector[j], states[t * d + j]) } }
        }
        if normalized {
            let length = vector.reduce(0) { $0 + $1 * $1 }.squareRoot()
            let scale = 1 / Swift.max(length, 1e-12)
            for j in 0..<d { vector[j] *= scale }
        }
        return vector
    }
}
