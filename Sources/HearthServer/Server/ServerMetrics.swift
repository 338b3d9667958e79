import Foundation
import Hearth
import HearthEngine
import Prometheus

/// What `/metrics` reports, in Prometheus' text format.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let promptTokens: Counter
    private let cachedPromptTokens: Counter
    private let completionTokens: Counter
    private let generations: Counter
    private let timeToFirstToken: DurationHistogram
    private let tokensPerSecond: ValueHistogram
    private let modelsLoaded: Gauge
    private let slotsBusy: Gauge
    private let requestsWaiting: Gauge
    private let queueWait: DurationHistogram
    private let transcriptionsRunning: Gauge
    private let transcriptions: Counter
    private let transcribedSeconds: Counter
    /// The label every series carries, so that several replicas' metrics add up.
    private let replica: (String, String)

    /// Metrics of the replica called `replica`.
    init(replica: String) {
        self.replica = ("replica", replica)
        let replica = [self.replica]
        promptTokens = registry.makeCounter(name: "hearth_prompt_tokens_total", labels: replica, help: "Prompt tokens of finished generations, cached ones included.")
        cachedPromptTokens = registry.makeCounter(name: "hearth_cached_prompt_tokens_total", labels: replica, help: "Prompt tokens reused from a slot's cache.")
        completionTokens = registry.makeCounter(name: "hearth_completion_tokens_total", labels: replica, help: "Tokens generated.")
        generations = registry.makeCounter(name: "hearth_generations_total", labels: replica, help: "Generations that ran to their end, cancelled ones included.")
        timeToFirstToken = registry.makeDurationHistogram(
            name: "hearth_time_to_first_token_seconds", labels: replica,
            buckets: [.milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                      .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30)],
            help: "Time from a generation's start to its first token, prompt evaluation included.")
        tokensPerSecond = registry.makeValueHistogram(
            name: "hearth_generation_tokens_per_second", labels: replica, buckets: [5, 10, 25, 50, 100, 150, 200, 300, 500, 1000],
            help: "Generation speed of each finished generation, after its first token.")
        modelsLoaded = registry.makeGauge(name: "hearth_models_loaded", labels: replica, help: "Models in memory.")
        slotsBusy = registry.makeGauge(name: "hearth_slots_busy", labels: replica, help: "Slots generating now, over all models.")
        requestsWaiting = registry.makeGauge(name: "hearth_requests_waiting", labels: replica, help: "Requests waiting for a slot.")
        queueWait = registry.makeDurationHistogram(
            name: "hearth_queue_wait_seconds", labels: replica,
            buckets: [.milliseconds(1), .milliseconds(10), .milliseconds(100), .milliseconds(500), .seconds(1),
                      .seconds(5), .seconds(15), .seconds(60)],
            help: "Time a generation request waited for a free slot.")
        transcriptionsRunning = registry.makeGauge(name: "hearth_transcriptions_running", labels: replica,
                                                   help: "Audio requests transcribing now or waiting for the speech model.")
        transcriptions = registry.makeCounter(name: "hearth_transcriptions_total", labels: replica, help: "Transcriptions and translations finished.")
        transcribedSeconds = registry.makeCounter(name: "hearth_transcribed_audio_seconds_total", labels: replica, help: "Seconds of audio transcribed.")
    }

    /// Counts an audio request from the time it has its audio until it has its text.
    func transcriptionStarted() { transcriptionsRunning.increment() }

    /// Ends what `transcriptionStarted` began; `seconds` of audio when it succeeded.
    func transcriptionEnded(seconds: Double?) {
        transcriptionsRunning.decrement()
        if let seconds {
            transcriptions.increment()
            transcribedSeconds.increment(by: seconds)
        }
    }

    /// Records how long a request waited for a slot.
    func waited(seconds: Double) { queueWait.record(.microseconds(Int64(seconds * 1e6))) }

    /// Sets the gauges of one loaded language model's shared passes and prompt cache.
    func passes(model: String, _ activity: BatchedGenerator.Activity) {
        let labels = [("model", model), replica]
        let values: [(String, String, Int)] = [
            ("hearth_forward_passes", "Forward passes run for the model since it was loaded.", activity.passes),
            ("hearth_forward_pass_rows", "Rows (tokens) evaluated in those passes.", activity.rows),
            ("hearth_shared_forward_passes", "Passes that advanced more than one generation at once.", activity.sharedPasses),
            ("hearth_most_sequences_per_pass", "The most generations one pass advanced.", activity.mostSequences),
            ("hearth_borrowed_prompt_tokens", "Prompt tokens copied from another conversation or the prompt cache instead of evaluated.",
             activity.borrowedPositions),
            ("hearth_prompt_cache_entries", "Conversations kept in the prompt cache.", activity.cachedSequences),
            ("hearth_prompt_cache_bytes", "Bytes of keys and values in the prompt cache.", activity.cachedBytes),
        ]
        for (name, help, value) in values {
            registry.makeGauge(name: name, labels: labels, help: help).set(Double(value))
        }
    }

    /// Sets the gauge of the bytes one loaded language model's slots keep keys and values in
    /// (each slot's whole context), labelled with the cache's types.
    func cache(model: String, types: KVCacheTypes, bytes: Int) {
        let labels = [("model", model), ("type_k", types.keys.rawValue), ("type_v", types.values.rawValue), replica]
        registry.makeGauge(name: "hearth_kv_cache_bytes", labels: labels,
                           help: "Bytes of keys and values the model's slots hold at full context.").set(Double(bytes))
    }

    /// Counts one HTTP request by route, method and status.
    func request(route: String, method: String, status: Int, seconds: Double) {
        let labels = [("route", route), ("method", method), ("status", String(status)), replica]
        registry.makeCounter(name: "hearth_http_requests_total", labels: labels, help: "HTTP requests answered.").increment()
        registry.makeDurationHistogram(
            name: "hearth_http_request_duration_seconds", labels: [("route", route), replica],
            buckets: [.milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
                      .seconds(15), .seconds(60)],
            help: "Time to answer an HTTP request, to the end of a streamed body."
        ).record(.milliseconds(Int64(seconds * 1000)))
    }

    /// Records a finished generation.
    func generation(_ stats: GenerationStatistics) {
        generations.increment()
        promptTokens.increment(by: Int64(stats.promptTokens))
        cachedPromptTokens.increment(by: Int64(stats.cachedPromptTokens))
        completionTokens.increment(by: Int64(stats.completionTokens))
        if stats.completionTokens > 0 {
            timeToFirstToken.record(.milliseconds(Int64(stats.timeToFirstToken * 1000)))
        }
        if stats.completionTokens > 1 { tokensPerSecond.record(stats.tokensPerSecond) }
    }

    /// Updates the gauges from the models in memory.
    func gauges(loaded: Int, busy: Int, waiting: Int) {
        modelsLoaded.set(Double(loaded))
        slotsBusy.set(Double(busy))
        requestsWaiting.set(Double(waiting))
    }

    func text() -> String { registry.emitToString() }
}
