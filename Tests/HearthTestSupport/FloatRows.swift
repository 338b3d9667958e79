import Foundation

/// What tests compute over whole rows of scores (a vocabulary's logits), here where it is
/// compiled with optimisation: the test targets' own code is not.
public enum FloatRows {
    /// The bit patterns of `row`, to compare floats exactly.
    public static func bits(_ row: UnsafeBufferPointer<Float>) -> [UInt32] {
        [UInt32](unsafeUninitializedCapacity: row.count) { out, count in
            for i in row.indices { out[i] = row[i].bitPattern }
            count = row.count
        }
    }

    /// The bit patterns of `row`, to compare floats exactly.
    public static func bits(_ row: [Float]) -> [UInt32] {
        row.withUnsafeBufferPointer(bits)
    }

    /// log Σ exp(row), in double.
    public static func logSumExp(_ row: UnsafeBufferPointer<Float>) -> Double {
        guard let top = row.max() else { return -.infinity }
        var sum = 0.0
        for x in row { sum += exp(Double(x) - Double(top)) }
        return Double(top) + log(sum)
    }

    /// The indices of the `count` highest of `row`, highest first (the lower index first on ties).
    public static func highest(_ row: [Float], _ count: Int) -> [Int] {
        var best: [Int] = []
        best.reserveCapacity(count + 1)
        for i in row.indices where best.count < count || row[i] > row[best[best.count - 1]] {
            let place = best.firstIndex { row[i] > row[$0] } ?? best.count
            best.insert(i, at: place)
            if best.count > count { best.removeLast() }
        }
        return best
    }
}
