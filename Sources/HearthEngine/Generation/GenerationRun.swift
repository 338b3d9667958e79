import HearthConstraints
import Foundation
import HearthCore

/// One generation from its prompt to its last chunk, stepped pass by pass by a driver
/// (`TransformerModel.generate` for one sequence, `BatchedGenerator` for many): the driver asks
/// for the rows it wants in the next pass, evaluates them beside other generations' rows, and
/// then lets it sample from its logits.
///
/// Everything that makes one generation differ from another lives here: its sequence, sampler,
/// stop sequences, JSON constraint, budget, statistics and the callback its chunks go to.
final class GenerationRun {
    let sequence: SequenceState
    let options: GenerationOptions
    private let model: TransformerModel
    private let onChunk: (GenerationChunk) throws -> Bool
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var firstTokenAt: ContinuousClock.Instant
    private(set) var statistics = GenerationStatistics()

    /// Prompt tokens not yet evaluated.
    private var pending: ArraySlice<Int32>
    /// The token sampled last, evaluated in the next pass.
    private var next: Int32?
    private var sampler: Sampler
    private var decoder = StreamingTextDecoder()
    private var stops: StopSequenceMatcher
    private let budget: Int
    /// JSON mode or a grammar: which tokens may come next.
    private var constraint: (any OutputConstraint)?
    private var constraintComplete = false
    /// What the sampler's penalties count: the prompt and the tokens generated after it.
    private var history: [Int32]
    /// Set once the last chunk has gone out.
    private(set) var isFinished = false

    /// Throws for options or a prompt that cannot run in `sequence` on `model`.
    static func check(model: TransformerModel, prompt: [Int32], options: GenerationOptions, sequence: SequenceState) throws {
        try options.validate(vocabularySize: model.configuration.vocabularySize)
        guard !prompt.isEmpty else { throw HearthError.invalidArgument("The prompt is empty.") }
        guard sequence.owner == ObjectIdentifier(model) else {
            throw HearthError.invalidArgument("This sequence belongs to a different model.")
        }
        guard prompt.count < sequence.contextLength else {
            throw HearthError.contextOverflow(needed: prompt.count + 1, limit: sequence.contextLength)
        }
        let vocabulary = Int32(model.configuration.vocabularySize)
        if let bad = prompt.first(where: { $0 < 0 || $0 >= vocabulary }) {
            throw HearthError.invalidArgument("Token id \(bad) is outside the vocabulary (0..<\(vocabulary)).")
        }
    }

    /// Prepares to continue `prompt`, the whole sequence: whatever `sequence` already holds that
    /// equals its beginning is reused rather than evaluated again, and the rest of the cache is
    /// dropped. Throws for options or a prompt that cannot run.
    init(model: TransformerModel, prompt: [Int32], options: GenerationOptions, sequence: SequenceState,
         onChunk: @escaping (GenerationChunk) throws -> Bool) throws {
        try Self.check(model: model, prompt: prompt, options: options, sequence: sequence)
        self.model = model
        self.sequence = sequence
        self.options = options
        self.onChunk = onChunk
        started = clock.now
        firstTokenAt = started
        statistics.promptTokens = prompt.count
        let reused = sequence.reusablePrefixLength(for: prompt)
        sequence.rewind(to: reused)
        statistics.cachedPromptTokens = reused
        pending = prompt[reused...]
        sampler = Sampler(options: options.sampling)
        stops = StopSequenceMatcher(options.stop)
        budget = min(options.maxTokens ?? Int.max, sequence.contextLength - prompt.count)
        if let grammar = try options.grammar ?? options.jsonSchema.map({ try model.schemaGrammar($0) }) {
            let program = model.grammarProgram(grammar)
            constraint = options.grammarTriggers.isEmpty ? GrammarConstraint(program: program)
                : LazyGrammarConstraint(program: program, triggers: options.grammarTriggers)
        } else if options.format == .json {
            constraint = JSONTokenConstraint(recognizer: JSONRecognizer(), table: model.tokenByteTable())
        }
        history = prompt
    }

    /// The rows this generation wants in the next pass: the next chunk of its prompt (always cut
    /// at the same places, see `TransformerModel.chunks`), or the token it sampled last.
    func nextRows() -> (tokens: [Int32], logits: LogitRows) {
        if let next { return ([next], .last) }
        let count = min(pending.count, sequence.chunkSize)
        let chunk = Array(pending.prefix(count))
        return (chunk, count == pending.count ? .last : .none)
    }

    /// Whether the next rows are part of the prompt.
    var isEvaluatingPrompt: Bool { next == nil }

    /// Takes in the pass that evaluated `nextRows()`: a prompt chunk moves the prompt on; the
    /// last one, or a sampled token, leads to sampling the next token from the sequence's
    /// logits, sending its chunk, and deciding whether to go on.
    func advance() throws {
        precondition(!isFinished)
        if next == nil {
            let count = min(pending.count, sequence.chunkSize)
            pending = pending.dropFirst(count)
            guard pending.isEmpty else { return }
            statistics.promptSeconds = (clock.now - started) / .seconds(1)
            firstTokenAt = clock.now
            if budget <= 0 { return try finish(.length) }
        }
        try sampleNext()
    }

    /// Ends the generation with `reason` and sends the last chunk, carrying the statistics.
    func finish(_ reason: FinishReason) throws {
        guard !isFinished else { return }
        isFinished = true
        statistics.generationSeconds = (clock.now - firstTokenAt) / .seconds(1)
        // Bytes of a character cut off by the end are dropped, never emitted as U+FFFD. Text held
        // back as a possible start of a stop sequence is emitted when the constrained output
        // completes (a matched stop sequence leaves none).
        var tail = ""
        if (reason != .stop && reason != .cancelled) || constraintComplete { tail = stops.flush() }
        _ = try onChunk(GenerationChunk(text: tail, finishReason: reason, statistics: statistics))
    }

    /// Ends the generation because of `error`: a last chunk with finish reason `error` and the
    /// statistics so far. The driver then throws or reports `error`.
    func fail() {
        guard !isFinished else { return }
        isFinished = true
        statistics.generationSeconds = (clock.now - firstTokenAt) / .seconds(1)
        _ = try? onChunk(GenerationChunk(text: "", finishReason: .error, statistics: statistics))
    }

    private func sampleNext() throws {
        let top = options.logprobs ? options.topLogprobs : 0
        if budget < Int.max { constraint?.setRemainingTokens(budget - statistics.completionTokens) }
        let picked: SampledToken? = sequence.logits.withUnsafeBufferPointer { values in
            switch (constraint, options.logprobs) {
            case (let constraint?, true):
                return sampler.sampleWithLogprobs(values, history: history, top: top, constraint: constraint)
            case (let constraint?, false):
                return sampler.sample(values, history: history, constraint: constraint)
                    .map { SampledToken(token: $0, logprob: 0, top: []) }
            case (nil, true):
                return sampler.sampleWithLogprobs(values, history: history, top: top)
            case (nil, false):
                return SampledToken(token: sampler.sample(values, history: history), logprob: 0, top: [])
            }
        }
        guard let picked else {
            throw HearthError.generationFailed(options.grammar != nil
                ? "No token can continue the output under the grammar (does a logit bias ban them, or does the grammar match nothing?)."
                : "JSON mode: no token can continue the JSON object (does a logit bias ban them?).")
        }
        let token = picked.token
        var chunk = GenerationChunk(text: "")
        if options.logprobs {
            chunk.logprob = picked.logprob
            chunk.topLogprobs = picked.top
        }
        history.append(token)
        statistics.completionTokens += 1
        if statistics.completionTokens == 1 {
            firstTokenAt = clock.now
            statistics.timeToFirstToken = (firstTokenAt - started) / .seconds(1)
        }
        if model.tokenizer.endOfGenerationTokens.contains(token) { return try finish(.stop) }
        let bytes = model.tokenizer.tokenBytes(token)
        if constraint != nil {
            // The sampler only returns allowed tokens; this guards the engine's own invariant.
            guard constraint!.accept(token, bytes: bytes) else {
                throw HearthError.generationFailed("The constraint sampled token \(token), which breaks it.")
            }
            constraintComplete = constraint!.isComplete
        }
        let matched = stops.append(decoder.append(bytes))
        chunk.text = matched.text
        chunk.token = token
        guard try onChunk(chunk) else { return try finish(.cancelled) }
        if matched.stopped || constraintComplete { return try finish(.stop) }
        if statistics.completionTokens == budget { return try finish(.length) }
        next = token
    }
}

extension TransformerModel {
    /// Generates the continuation of `prompt` in `sequence`, calling `onChunk` for each token;
    /// return false from it to stop (finish reason `cancelled`).
    ///
    /// `prompt` is the whole sequence. Whatever `sequence` already holds that equals its
    /// beginning is reused rather than evaluated again (`cachedPromptTokens` counts it), so a
    /// conversation that grows turn by turn evaluates only its new tokens; the rest of the cache
    /// is dropped. The last chunk carries the finish reason and the statistics, which are also
    /// returned.
    ///
    /// With `options.format` `.json`, each token is sampled among those that keep the answer the
    /// beginning of one JSON object (`JSONTokenConstraint`), and generation stops (finish reason
    /// `stop`) with the token that completes it. `maxTokens`, the context's end, a stop sequence
    /// or cancellation can still cut the object short: the finish reason then says which. If no
    /// token can continue the object (a logit bias banning all of them), generation fails with
    /// `generationFailed`.
    @discardableResult
    public func generate(prompt: [Int32], options: GenerationOptions = .greedy, sequence: SequenceState,
                         onChunk: (GenerationChunk) throws -> Bool) throws -> GenerationStatistics {
        try withoutActuallyEscaping(onChunk) { onChunk in
            let run = try GenerationRun(model: self, prompt: prompt, options: options, sequence: sequence, onChunk: onChunk)
            while !run.isFinished {
                do {
                    let rows = run.nextRows()
                    var batch = Batch()
                    try batch.add(rows.tokens, to: sequence, logits: rows.logits)
                    try evaluate(batch)
                    try run.advance()
                } catch {
                    run.fail()
                    throw error
                }
            }
            return run.statistics
        }
    }
}
