import HearthCore

/// Which rows of a sequence's tokens in a batch need logits.
public enum LogitRows: Sendable, Equatable {
    /// None: the tokens only fill the cache (a prompt chunk before the last).
    case none
    /// The last row only: what generation samples from.
    case last
    /// Every row (prompt log-probabilities).
    case all
}

/// The rows of one forward pass, as llama.cpp's `llama_batch` has them: each row is a token of
/// some sequence at some position, with a flag saying whether its logits are wanted. A prompt
/// chunk of one sequence and the next tokens of others share a pass, so every weight is read
/// once for all of them.
///
/// A sequence's rows are consecutive in the batch and take its next positions in order.
public struct Batch {
    /// The rows of one sequence.
    struct Run {
        let sequence: SequenceState
        let tokens: [Int32]
        let logits: LogitRows
        /// Index of this run's first row in the pass.
        let firstRow: Int
    }

    private(set) var runs: [Run] = []
    /// Rows in the batch.
    public private(set) var rowCount = 0

    /// An empty batch.
    public init() {}

    /// The sequences in the batch, in the order they were added.
    public var sequences: [SequenceState] { runs.map(\.sequence) }

    /// Whether the batch has no rows.
    public var isEmpty: Bool { rowCount == 0 }

    /// Adds `tokens` as the next positions of `sequence`. A sequence takes one run of rows per
    /// batch; its tokens must fit in its context and be in the vocabulary (checked when the
    /// batch is evaluated).
    public mutating func add(_ tokens: [Int32], to sequence: SequenceState, logits: LogitRows = .last) throws {
        guard !tokens.isEmpty else { throw HearthError.invalidArgument("Nothing to evaluate: the token list is empty.") }
        guard !runs.contains(where: { $0.sequence === sequence }) else {
            throw HearthError.invalidArgument("A sequence can have only one run of rows in a batch; add its tokens together.")
        }
        let needed = sequence.position + tokens.count
        guard needed <= sequence.contextLength else {
            throw HearthError.contextOverflow(needed: needed, limit: sequence.contextLength)
        }
        runs.append(Run(sequence: sequence, tokens: tokens, logits: logits, firstRow: rowCount))
        rowCount += tokens.count
    }
}
