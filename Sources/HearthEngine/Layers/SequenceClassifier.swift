import Foundation
import HearthKernels

/// A sequence-classification head (`BertForSequenceClassification`'s): the pooler (dense, then
/// tanh) on each sequence's first token ([CLS]), then a linear classifier.
struct SequenceClassifier: @unchecked Sendable {
    /// (width, width).
    let pooler: DenseMatrix
    /// (labels, width).
    let classifier: DenseMatrix

    var labels: Int { classifier.rows }

    /// The logits of `count` sequences whose first tokens' states are the rows of `first`
    /// ((count, width)), `labels` each.
    func callAsFunction(_ first: [Float], count: Int) -> [[Float]] {
        let h = pooler.columns, labels = labels
        var pooled = [Float](repeating: 0, count: count * h)
        var logits = [Float](repeating: 0, count: count * labels)
        first.withUnsafeBufferPointer { first in
            pooled.withUnsafeMutableBufferPointer { pooled in
                pooler.multiply(first.baseAddress!, inputStride: h, count: count, rows: 0..<h, output: pooled.baseAddress!, outputStride: h)
            }
        }
        for k in pooled.indices { pooled[k] = tanh(pooled[k]) }
        pooled.withUnsafeBufferPointer { pooled in
            logits.withUnsafeMutableBufferPointer { logits in
                classifier.multiply(pooled.baseAddress!, inputStride: h, count: count, rows: 0..<labels,
                                    output: logits.baseAddress!, outputStride: labels)
            }
        }
        return (0..<count).map { Array(logits[$0 * labels..<($0 + 1) * labels]) }
    }
}
