/// Separates a reasoning model's thoughts from its answer in streamed text: `<think>…</think>`
/// at the start of the output (Qwen3, QwQ, DeepSeek R1), or, when the prompt already opened
/// `<think>`, everything up to `</think>`; or, in gpt-oss's harmony format, the `analysis`
/// channel's message before the `final` channel's (``Markers/harmony``).
///
/// Text that could still be part of a tag, and whitespace that might turn out to border one, is
/// held back until the next piece decides it, so the result does not depend on how the output
/// was cut into pieces. The thoughts lose the whitespace around them and the answer the
/// whitespace after `</think>`; output that does not begin with `<think>` (and was not opened by
/// the prompt) is all answer, unchanged. Thoughts that never close are all thoughts.
///
/// ```swift
/// var splitter = ReasoningSplitter(startsInThoughts: false)
/// var thoughts = "", answer = ""
/// for piece in ["<thi", "nk>\nHmm.</th", "ink>\n\nHello"] {
///     let part = splitter.append(piece)
///     thoughts += part.reasoning; answer += part.answer
/// }
/// let last = splitter.finish()   // thoughts == "Hmm.", answer == "Hello"
/// ```
public struct ReasoningSplitter: Sendable {
    /// The tag that opens the thoughts.
    public static let openingTag = "<think>"
    /// The tag that closes them.
    public static let closingTag = "</think>"

    /// What opens and closes the thoughts, and the headers the answer may begin with.
    public struct Markers: Sendable, Equatable {
        let opening: [UInt8]
        let closing: [UInt8]
        /// Dropped where the answer begins (after the thoughts, or at the start of output
        /// without them).
        let answerHeaders: [[UInt8]]
        /// Whether more thoughts may open after they close (harmony's messages), rather than
        /// the answer following once and for all.
        let thoughtsReopen: Bool

        /// `<think>…</think>`.
        public static let think = Markers(opening: Array(openingTag.utf8), closing: Array(closingTag.utf8), answerHeaders: [],
                                          thoughtsReopen: false)
        /// gpt-oss's harmony messages: `<|channel|>analysis<|message|>` thoughts `<|end|>`, then
        /// `<|start|>assistant<|channel|>final<|message|>` and the answer (or another message:
        /// more analysis, or a call).
        public static let harmony = Markers(
            opening: Array("<|channel|>analysis<|message|>".utf8), closing: Array("<|end|>".utf8),
            answerHeaders: [Array("<|start|>assistant<|channel|>final<|message|>".utf8), Array("<|channel|>final<|message|>".utf8),
                            Array("<|start|>assistant".utf8)],
            thoughtsReopen: true)
        /// Gemma 4's thought channel: `<|channel>thought` thoughts `<channel|>`, then the answer.
        public static let gemma4 = Markers(opening: Array("<|channel>thought".utf8), closing: Array("<channel|>".utf8),
                                           answerHeaders: [], thoughtsReopen: false)
    }

    private enum Phase: Sendable {
        /// Nothing but whitespace yet: a `<think>` may still come.
        case undecided
        /// The prompt opened the thoughts; whitespace and a repeated `<think>` are skipped.
        case opening
        case thinking
        /// After `</think>`: whitespace before the answer is skipped.
        case closed
        case answering
    }

    private let markers: Markers
    private var opening: [UInt8] { markers.opening }
    private var closing: [UInt8] { markers.closing }

    private var phase: Phase
    private var pending: [UInt8] = []
    private var thoughtsStarted = false

    /// A splitter for output that begins after a prompt ending inside the opening marker
    /// (`startsInThoughts`), or that may begin with it itself.
    public init(startsInThoughts: Bool, markers: Markers = .think) {
        self.markers = markers
        phase = startsInThoughts ? .opening : .undecided
    }

    /// Whether the output read so far is inside the thoughts (or opening them).
    public var isInThoughts: Bool {
        switch phase {
        case .opening, .thinking: true
        case .undecided, .closed, .answering: false
        }
    }

    /// Adds the next piece of output and returns the thoughts and the answer it completes.
    public mutating func append(_ text: String) -> (reasoning: String, answer: String) {
        if phase == .answering { return ("", text) }
        pending += text.utf8
        var reasoning: [UInt8] = [], answer: [UInt8] = []
        while true {
            switch phase {
            case .undecided:
                let rest = pending.drop(while: Self.isSpace)
                if rest.starts(with: opening) {
                    pending = Array(rest.dropFirst(opening.count))
                    phase = .thinking
                } else if rest.count < opening.count, opening.starts(with: rest) {
                    return (Self.text(reasoning), Self.text(answer))
                } else if let start = answerStart(rest) {
                    // No thoughts: all answer, as it is but for a header.
                    answer += start.startIndex == rest.startIndex ? pending[...] : start
                    pending = []
                    phase = .answering
                } else {
                    return (Self.text(reasoning), Self.text(answer))
                }
            case .opening:
                let rest = pending.drop(while: Self.isSpace)
                if rest.starts(with: opening) {
                    pending = Array(rest.dropFirst(opening.count))
                } else if rest.count < opening.count, opening.starts(with: rest) {
                    return (Self.text(reasoning), Self.text(answer))
                } else {
                    pending = Array(rest)
                }
                phase = .thinking
            case .thinking:
                if !thoughtsStarted {
                    pending = Array(pending.drop(while: Self.isSpace))
                    thoughtsStarted = !pending.isEmpty
                }
                if let end = Self.firstIndex(of: closing, in: pending) {
                    reasoning += Self.trimmingTrailingSpace(pending[..<end])
                    pending = Array(pending[(end + closing.count)...])
                    phase = .closed
                } else {
                    let cut = pending.count - heldBackLength()
                    reasoning += pending[..<cut]
                    pending.removeFirst(cut)
                    return (Self.text(reasoning), Self.text(answer))
                }
            case .closed:
                pending = Array(pending.drop(while: Self.isSpace))
                guard !pending.isEmpty, let start = answerStart(pending[...]) else {
                    return (Self.text(reasoning), Self.text(answer))
                }
                if markers.thoughtsReopen, start.starts(with: opening) {
                    // Another message of thoughts (harmony): they go on, a line apart.
                    pending = Array(start.dropFirst(opening.count))
                    reasoning += [0x0A]
                    thoughtsStarted = false
                    phase = .thinking
                    continue
                }
                if markers.thoughtsReopen, start.count < opening.count, opening.starts(with: start) {
                    return (Self.text(reasoning), Self.text(answer))
                }
                pending = Array(start)
                phase = .answering
            case .answering:
                answer += pending
                pending = []
                return (Self.text(reasoning), Self.text(answer))
            }
        }
    }

    /// The text held back, once the output has ended: an unfinished tag or trailing whitespace
    /// is what it looked like (trailing whitespace of the thoughts is dropped).
    public mutating func finish() -> (reasoning: String, answer: String) {
        defer { pending = [] }
        switch phase {
        case .undecided:
            phase = .answering
            // Harmony's output opens with a header: one cut off by the end is markup.
            if markers.thoughtsReopen, pending.drop(while: Self.isSpace).count > 1 { return ("", "") }
            return ("", Self.text(pending))
        case .opening, .thinking:
            var rest = pending[...]
            if !thoughtsStarted { rest = rest.drop(while: Self.isSpace) }
            phase = .closed
            return (Self.text(Self.trimmingTrailingSpace(rest)), "")
        case .closed:
            // The beginning of a header, or of more thoughts, cut off by the end: markup, not
            // answer (a lone byte may be text).
            return ("", pending.count > 1 ? "" : Self.text(pending))
        case .answering:
            return ("", "")
        }
    }

    /// Where the answer begins in `rest`: after one of the markers' answer headers, or at
    /// once; nil while `rest` may still turn out to be a header.
    private func answerStart(_ rest: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        for header in markers.answerHeaders {
            if rest.starts(with: header) { return rest.dropFirst(header.count) }
            if rest.count < header.count, header.starts(with: rest) { return nil }
        }
        return rest
    }

    /// Splits a whole output at once, as streaming it through a splitter does.
    public static func split(_ text: String, startsInThoughts: Bool,
                             markers: Markers = .think) -> (reasoning: String, answer: String) {
        var splitter = ReasoningSplitter(startsInThoughts: startsInThoughts, markers: markers)
        let first = splitter.append(text)
        let last = splitter.finish()
        return (first.reasoning + last.reasoning, first.answer + last.answer)
    }

    /// Bytes at the end of the thoughts that may yet belong to `</think>` or to the whitespace
    /// before it.
    private func heldBackLength() -> Int {
        var length = min(closing.count - 1, pending.count)
        while length > 0, !pending.suffix(length).elementsEqual(closing.prefix(length)) { length -= 1 }
        var start = pending.count - length
        while start > 0, Self.isSpace(pending[start - 1]) { start -= 1 }
        return pending.count - start
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func trimmingTrailingSpace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = bytes.endIndex
        while end > bytes.startIndex, isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[..<end]
    }

    private static func firstIndex(of tag: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= tag.count else { return nil }
        for start in 0...(bytes.count - tag.count) where bytes[start] == tag[0] {
            if bytes[start..<start + tag.count].elementsEqual(tag) { return start }
        }
        return nil
    }

    private static func text<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
