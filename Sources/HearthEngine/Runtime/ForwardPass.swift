import HearthKernels

/// One forward pass in progress: a batch's rows laid out for the layers, with the model's
/// workspace and threads. Layers find each row's sequence and position here; architectures
/// never touch positions or caches themselves.
final class ForwardPass {
    let configuration: ModelConfiguration
    let workspace: Workspace
    let pool: WorkerPool
    /// Rows in the pass.
    private(set) var rows: Int
    /// Each row's token.
    private(set) var tokens: [Int32]
    /// Each row's position in its sequence.
    private(set) var positions: [Int]
    /// Each row's run (an index into `sequences`).
    private(set) var rowRun: [Int]
    /// The sequences in the pass, one run of consecutive rows each.
    private(set) var sequences: [SequenceState]
    /// Rows of each run. Kernels whose sums depend on how many rows a pass has sum each run as
    /// a pass of its own, so a row's result never depends on the other sequences beside it.
    private(set) var runLengths: [Int]
    /// The rows whose logits are wanted, in order.
    private(set) var logitRows: [Int]
    /// How many of `logitRows` each run has (runs with none left out).
    private(set) var logitRuns: [Int]
    /// The stream every block adds into: (rows, dim).
    let residual: UnsafeMutablePointer<Float>
    /// A norm's output, the input of a block: (rows, dim).
    let normed: UnsafeMutablePointer<Float>
    /// A block's output before it is added to the residual stream: (rows, dim).
    let blockOutput: UnsafeMutablePointer<Float>
    /// RoPE tables computed in this pass, by rotary embedding.
    var rotaryTables: [ObjectIdentifier: UnsafeMutablePointer<Float>] = [:]

    init(batch: Batch, configuration: ModelConfiguration, workspace: Workspace, pool: WorkerPool) {
        self.configuration = configuration
        self.workspace = workspace
        self.pool = pool
        rows = batch.rowCount
        var tokens: [Int32] = [], positions: [Int] = [], rowRun: [Int] = []
        var logitRows: [Int] = [], logitRuns: [Int] = []
        tokens.reserveCapacity(rows)
        positions.reserveCapacity(rows)
        rowRun.reserveCapacity(rows)
        for (index, run) in batch.runs.enumerated() {
            let start = run.sequence.position
            tokens += run.tokens
            positions += start..<start + run.tokens.count
            rowRun += repeatElement(index, count: run.tokens.count)
            switch run.logits {
            case .none:
                break
            case .last:
                logitRows.append(run.firstRow + run.tokens.count - 1)
                logitRuns.append(1)
            case .all:
                logitRows += run.firstRow..<run.firstRow + run.tokens.count
                logitRuns.append(run.tokens.count)
            }
        }
        self.tokens = tokens
        self.positions = positions
        self.rowRun = rowRun
        self.logitRows = logitRows
        self.logitRuns = logitRuns
        sequences = batch.runs.map(\.sequence)
        runLengths = batch.runs.map(\.tokens.count)
        residual = workspace.floats(.residual, rows * configuration.embeddingLength)
        normed = workspace.floats(.normed, rows * configuration.embeddingLength)
        blockOutput = workspace.floats(.blockOutput, rows * configuration.embeddingLength)
    }

    /// The sequence of `row`.
    @inline(__always)
    func sequence(ofRow row: Int) -> SequenceState { sequences[rowRun[row]] }

    /// Whether `row` is its sequence's only row in this pass (llama.cpp sums attention in
    /// another order for a single token than for several).
    @inline(__always)
    func isAlone(_ row: Int) -> Bool { runLengths[rowRun[row]] == 1 }

    /// `output = W · x` for each row of `x` (width `columns`) and each matrix, the matrices'
    /// outputs side by side in each output row (see `WorkerPool.multiply`). The rows are first
    /// converted to the activation formats the matrices' kernels need, once per format.
    func project(_ x: UnsafePointer<Float>, columns: Int, rows: Int? = nil, runs: [Int]? = nil,
                 through matrices: [WeightMatrix], into output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let rows = rows ?? self.rows
        let scratch = workspace.quantized(columns: columns, rows: rows)
        scratch.quantize(x, rows: rows, for: matrices, pool: pool)
        pool.multiply(matrices, by: scratch, columns: rows, runs: runs ?? runLengths, output: output, outputStride: outputStride,
                      ahead: workspace.readOrder.product(matrices, threads: pool.threadCount))
    }

    /// Runs `body` for every row, split across the threads when the rows hold enough work
    /// (`width` values each) to be worth a hand-over. Rows must not share what they write.
    func forEachRow(width: Int, _ body: (Int) -> Void) {
        if rows * width < 16_384 {
            for row in 0..<rows { body(row) }
        } else {
            pool.parallelFor(rows) { range in range.forEach(body) }
        }
    }

    /// Each sequence's run of rows, in the order of the pass.
    var runs: [(rows: Range<Int>, sequence: SequenceState)] {
        var first = 0
        return zip(runLengths, sequences).map { length, sequence in
            defer { first += length }
            return (first..<first + length, sequence)
        }
    }

    /// Runs `body` for each sequence's run of rows, in the order of its positions, the runs
    /// split across the threads when they hold enough work (`width` values a row).
    func forEachRun(width: Int, _ body: (Range<Int>, SequenceState) -> Void) {
        let runs = runs
        if runs.count == 1 || rows * width < 16_384 {
            for run in runs { body(run.rows, run.sequence) }
        } else {
            pool.parallelFor(runs.count) { range in
                for index in range { body(runs[index].rows, runs[index].sequence) }
            }
        }
    }

    /// Keeps only the rows whose logits are wanted, moved in order to the front of the residual
    /// stream and of `blockOutput` ((rows, dim) each), as llama.cpp's graphs do after the last
    /// block's attention: that block's feed-forward network and the output head see only those
    /// rows, each sequence's as a run of its own. Returns false when no row is wanted.
    func keepLogitRows(alongWith blockOutput: UnsafeMutablePointer<Float>) -> Bool {
        let dim = configuration.embeddingLength
        // Rows only move towards the front, each onto a row already read.
        for (i, row) in logitRows.enumerated() where i != row {
            (residual + i * dim).update(from: residual + row * dim, count: dim)
            (blockOutput + i * dim).update(from: blockOutput + row * dim, count: dim)
        }
        var keptRuns: [Int] = []
        for row in logitRows where keptRuns.last != rowRun[row] { keptRuns.append(rowRun[row]) }
        tokens = logitRows.map { tokens[$0] }
        positions = logitRows.map { positions[$0] }
        sequences = keptRuns.map { sequences[$0] }
        runLengths = logitRuns
        rowRun = logitRuns.enumerated().flatMap { repeatElement($0.offset, count: $0.element) }
        rows = logitRows.count
        logitRows = Array(0..<rows)
        return rows > 0
    }

    /// `x += y` over every row of the residual stream.
    func addToResidual(_ y: UnsafePointer<Float>) {
        TensorMath.add(y, to: residual, count: rows * configuration.embeddingLength)
    }
}
