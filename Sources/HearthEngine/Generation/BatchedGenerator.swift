import Foundation
import HearthCore
import Synchronization

/// Runs many generations on one model in shared forward passes: each step evaluates the last
/// sampled token of every running generation together with the next prompt chunks of those
/// still reading their prompts, so each weight is read once for all of them.
///
/// Generations have their own prompts, options, stop conditions, statistics and cancellation;
/// one joins between steps and leaves as soon as it finishes. Because a row's arithmetic does
/// not depend on the rows beside it, each gives exactly the tokens it would give alone.
///
/// A prompt starts from the longest beginning it shares with any sequence the generator has
/// served, or with the copies it keeps of sequences that moved on to other prompts (a prompt
/// cache bounded in bytes), not only with what its own sequence holds. So the sequences given
/// to a generator are read by it between steps: use each through one generator only.
///
/// Steps run on a thread of the generator's own while there is work; chunks are delivered on
/// it, so `onChunk` should hand them on rather than block.
public final class BatchedGenerator: Sendable {
    /// The model every generation runs on.
    public let model: TransformerModel
    /// Most generations running at once; later ones wait for a place, first come first served.
    public let maxRunning: Int
    /// Most rows in one pass. Running generations' tokens always go in; prompt chunks join
    /// while they fit (one always does, so a prompt is never starved).
    public let maxPassRows: Int

    /// A generation submitted and not yet finished.
    private final class Entry: @unchecked Sendable {
        let prompt: [Int32]
        let options: GenerationOptions
        let sequence: SequenceState
        let onChunk: @Sendable (GenerationChunk) -> Bool
        let onEnd: @Sendable ((any Error)?) -> Void
        let cancelled = Atomic<Bool>(false)
        var run: GenerationRun?

        init(prompt: [Int32], options: GenerationOptions, sequence: SequenceState,
             onChunk: @escaping @Sendable (GenerationChunk) -> Bool, onEnd: @escaping @Sendable ((any Error)?) -> Void) {
            self.prompt = prompt
            self.options = options
            self.sequence = sequence
            self.onChunk = onChunk
            self.onEnd = onEnd
        }
    }

    private struct Queue {
        var waiting: [Entry] = []
        var stepping = false
    }

    /// What the generator has evaluated so far.
    public struct Activity: Sendable, Equatable {
        /// Forward passes run.
        public var passes = 0
        /// Rows evaluated over all passes.
        public var rows = 0
        /// Passes that held more than one sequence.
        public var sharedPasses = 0
        /// The most sequences one pass held.
        public var mostSequences = 0
        /// Prompts that started from another sequence's positions or from the prompt cache.
        public var borrowedPrefixes = 0
        /// Prompt positions copied so instead of being evaluated.
        public var borrowedPositions = 0
        /// Sequences' positions kept in the prompt cache now, and the bytes they take.
        public var cachedSequences = 0
        public var cachedBytes = 0
    }

    private let queue = Mutex(Queue())
    private let counters = Mutex(Activity())
    /// Read and changed on the generator's thread only.
    private nonisolated(unsafe) let prefixes: PrefixCache
    private nonisolated(unsafe) var served: [WeakSequence] = []

    /// What the generator has evaluated so far.
    public var activity: Activity { counters.withLock { $0 } }
    private let thread = DispatchQueue(label: "hearth.batched-generator", qos: .userInitiated)

    /// A generator on `model` running at most `maxRunning` generations at once, in passes of at
    /// most `maxPassRows` rows, keeping up to `promptCacheBytes` bytes of keys and values of
    /// sequences that moved on (0 keeps none).
    public init(model: TransformerModel, maxRunning: Int = 8, maxPassRows: Int = 512, promptCacheBytes: Int = 0) throws {
        guard maxRunning >= 1 else { throw HearthError.invalidArgument("maxRunning must be at least 1, got \(maxRunning).") }
        guard (1...TransformerModel.maximumPassRows).contains(maxPassRows) else {
            throw HearthError.invalidArgument("maxPassRows must be between 1 and \(TransformerModel.maximumPassRows), got \(maxPassRows).")
        }
        self.model = model
        self.maxRunning = maxRunning
        self.maxPassRows = maxPassRows
        prefixes = PrefixCache(byteLimit: promptCacheBytes)
    }

    /// A handle on a submitted generation.
    public struct Ticket: Sendable {
        fileprivate let cancelFlag: @Sendable () -> Void

        /// Stops the generation after the step in progress; its last chunk says `cancelled`.
        public func cancel() { cancelFlag() }
    }

    /// Submits a generation of the continuation of `prompt` in `sequence` (the whole sequence:
    /// what the sequence holds of its beginning is reused, as in `TransformerModel.generate`).
    /// `onChunk` receives each chunk, the last with the finish reason and statistics; returning
    /// false stops the generation. `onEnd` is called once at the very end, with the error when
    /// the generation failed (after a last chunk with finish reason `error`, when one could be
    /// sent). A sequence runs one generation at a time: a second one submitted for it waits.
    /// Once given to a generator, a sequence is read by it between steps (to share its
    /// positions with other prompts): use it through this generator only from then on.
    @discardableResult
    public func submit(prompt: [Int32], options: GenerationOptions, sequence: SequenceState,
                       onChunk: @escaping @Sendable (GenerationChunk) -> Bool,
                       onEnd: @escaping @Sendable ((any Error)?) -> Void = { _ in }) -> Ticket {
        let entry = Entry(prompt: prompt, options: options, sequence: sequence, onChunk: onChunk, onEnd: onEnd)
        let start = queue.withLock { queue -> Bool in
            queue.waiting.append(entry)
            defer { queue.stepping = true }
            return !queue.stepping
        }
        if start { thread.async { self.loop() } }
        return Ticket { entry.cancelled.store(true, ordering: .relaxed) }
    }

    /// Streams the continuation of `prompt` in `sequence`; dropping the stream or cancelling the
    /// task that reads it stops the generation after the step in progress.
    public func stream(prompt: [Int32], options: GenerationOptions, sequence: SequenceState)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        let ticket = submit(prompt: prompt, options: options, sequence: sequence, onChunk: { chunk in
            if case .terminated = continuation.yield(chunk) { return false }
            return true
        }, onEnd: { error in
            continuation.finish(throwing: error)
        })
        continuation.onTermination = { _ in ticket.cancel() }
        return stream
    }

    /// Steps while any generation runs or waits, then lets the thread go.
    private func loop() {
        var running: [Entry] = []
        while true {
            let joined = queue.withLock { queue -> [Entry]? in
                var joined: [Entry] = []
                var index = 0
                while running.count + joined.count < maxRunning, index < queue.waiting.count {
                    let entry = queue.waiting[index]
                    // One generation per sequence at a time; a later one keeps its place in line.
                    if running.contains(where: { $0.sequence === entry.sequence })
                        || joined.contains(where: { $0.sequence === entry.sequence }) {
                        index += 1
                        continue
                    }
                    joined.append(queue.waiting.remove(at: index))
                }
                if running.isEmpty && joined.isEmpty {
                    queue.stepping = false
                    return nil
                }
                return joined
            }
            guard let joined else { return }
            for entry in joined { start(entry) }
            running += joined
            running.removeAll { $0.run == nil }
            step(running)
            running.removeAll { entry in
                guard entry.run?.isFinished ?? true else { return false }
                return true
            }
        }
    }

    private func start(_ entry: Entry) {
        do {
            // A request that cannot run leaves its sequence as it was.
            try GenerationRun.check(model: model, prompt: entry.prompt, options: entry.options, sequence: entry.sequence)
            try borrowPrefix(for: entry)
            let onChunk = entry.onChunk
            entry.run = try GenerationRun(model: model, prompt: entry.prompt, options: entry.options,
                                          sequence: entry.sequence, onChunk: { onChunk($0) })
        } catch {
            entry.onEnd(error)
        }
    }

    /// Lets `entry`'s sequence start from the longest reproducible beginning (whole prompt
    /// chunks) its prompt shares with any sequence served or kept, when that is longer than what
    /// it holds itself; so it still gives the bits it would give alone. What the sequence holds
    /// reproducibly beyond the part of the prompt it shares is about to be replaced; unless
    /// another sequence or the cache holds it too, it goes into the cache first.
    private func borrowPrefix(for entry: Entry) throws {
        let prompt = entry.prompt, sequence = entry.sequence
        guard sequence.owner == ObjectIdentifier(model) else { return }
        served.removeAll { $0.sequence == nil }
        // Only sequences whose positions were computed as this one's would be: chunks of the same
        // size, and the same context length (Phi-3 picks its rotation by it).
        let others = served.compactMap(\.sequence).filter {
            $0 !== sequence && $0.chunkSize == sequence.chunkSize && $0.contextLength == sequence.contextLength
                && $0.cacheTypes == sequence.cacheTypes
        }
        if !served.contains(where: { $0.sequence === sequence }) { served.append(WeakSequence(sequence)) }
        let own = sequence.reusablePrefixLength(for: prompt)
        // At least the prompt's last token is evaluated, for its logits; whole chunks only.
        func usable(_ shared: Int) -> Int { min(shared, prompt.count - 1) / sequence.chunkSize * sequence.chunkSize }
        var best: (sequence: SequenceState, shared: Int)?
        for other in others {
            let shared = usable(other.reproduciblePrefixLength(with: prompt))
            if shared > max(own, best?.shared ?? 0) { best = (other, shared) }
        }
        var fromCache = false
        if let cached = prefixes.longestPrefix(of: prompt, like: sequence), usable(cached.shared) > max(own, best?.shared ?? 0) {
            best = (cached.sequence, usable(cached.shared))
            fromCache = true
        }
        let held = Array(sequence.tokens[..<(sequence.reproducible - sequence.reproducible % sequence.chunkSize)])
        if held.count > own, !others.contains(where: { $0.reproduciblePrefixLength(with: held) == held.count }) {
            prefixes.keep(sequence, model: model)
        }
        var borrowed = 0
        if let best, best.shared > own {
            if fromCache { prefixes.touch(best.sequence) }
            try best.sequence.copyPrefix(best.shared, to: sequence)
            borrowed = best.shared - own
        }
        counters.withLock {
            $0.borrowedPrefixes += borrowed > 0 ? 1 : 0
            $0.borrowedPositions += borrowed
            $0.cachedSequences = prefixes.count
            $0.cachedBytes = prefixes.bytes
        }
    }

    /// One pass over the running generations, then each one's sampling.
    private func step(_ running: [Entry]) {
        var batch = Batch()
        var stepped: [Entry] = []
        for entry in running {
            guard let run = entry.run, !run.isFinished else { continue }
            if entry.cancelled.load(ordering: .relaxed) {
                finish(entry) { try run.finish(.cancelled) }
                continue
            }
            let rows = run.nextRows()
            // Running generations' single tokens always fit; a prompt chunk waits for a pass with
            // room, unless the pass would otherwise have nothing to do.
            if rows.tokens.count > 1, !batch.isEmpty, batch.rowCount + rows.tokens.count > maxPassRows { continue }
            do {
                try batch.add(rows.tokens, to: entry.sequence, logits: rows.logits)
                stepped.append(entry)
            } catch {
                run.fail()
                finish(entry, error: error)
            }
        }
        guard !batch.isEmpty else { return }
        counters.withLock {
            $0.passes += 1
            $0.rows += batch.rowCount
            $0.sharedPasses += stepped.count > 1 ? 1 : 0
            $0.mostSequences = max($0.mostSequences, stepped.count)
        }
        do {
            try model.evaluate(batch)
        } catch {
            for entry in stepped {
                entry.run?.fail()
                finish(entry, error: error)
            }
            return
        }
        for entry in stepped {
            guard let run = entry.run else { continue }
            finish(entry) { try run.advance() }
        }
    }

    /// Runs `body` on `entry`'s generation and reports its end once it has finished or failed.
    private func finish(_ entry: Entry, _ body: () throws -> Void) {
        do {
            try body()
            if entry.run?.isFinished == true { entry.onEnd(nil) }
        } catch {
            entry.run?.fail()
            finish(entry, error: error)
        }
    }

    private func finish(_ entry: Entry, error: any Error) {
        entry.onEnd(error)
        entry.run = nil
    }
}

/// A sequence the generator has served, held without keeping it alive.
private struct WeakSequence {
    weak var sequence: SequenceState?
    init(_ sequence: SequenceState) { self.sequence = sequence }
}
