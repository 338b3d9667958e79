import Foundation

/// Word times from the decoder's cross-attention, as faster-whisper's `add_word_timestamps`
/// and CTranslate2's `align` find them: the window's text is decoded once more after the
/// start of transcript; the alignment heads' attention over the audio is normalized across
/// the tokens, smoothed by a median filter, averaged over the heads, and the cheapest
/// monotonic path through it (dynamic time warping) says when each token begins. Words are the
/// tokens grouped at spaces and punctuation; their times are then tidied as faster-whisper does.
public struct WordAligner {
    let model: WhisperModel
    let tokenizer: WhisperTokenizer
    let heads: [(layer: Int, head: Int)]
    let language: String
    /// `<|startoftranscript|>`, the language and the task.
    let sotSequence: [Int]

    /// Punctuation that joins the word after it, and the word before it.
    static let prepended = "\"'“¿([{-"
    static let appended = "\"'.。,，!！?？:：”)]}、"
    static let sentenceEnds = ".。!！?？"
    /// Python's `string.punctuation`.
    static let asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    /// Encoder positions per second (two mel frames each).
    static let positionsPerSecond = 50.0

    /// A word with the tokens it spans and its times within the window.
    public struct Timing {
        public var word: String
        public var tokens: [Int]
        public var start: Double
        public var end: Double
        public var probability: Double

        public init(word: String, tokens: [Int], start: Double, end: Double, probability: Double) {
            self.word = word
            self.tokens = tokens
            self.start = start
            self.end = end
            self.probability = probability
        }
    }

    /// Gives each piece of a window its words and moves the pieces' ends to them. `frames` is
    /// the window's length in mel frames, `lastSpeechTime` the end of the speech before it.
    func addWordTimestamps(to pieces: inout [Transcriber.Piece], decoding: WhisperModel.Decoding, frames: Int,
                           timeOffset: Double, lastSpeechTime: Double) throws {
        let endOfText = tokenizer.endOfText
        let perPiece = pieces.map { $0.tokens.filter { $0 < endOfText } }
        var alignment = try align(perPiece.flatMap { $0 }, decoding: decoding, frames: frames)

        let durations = alignment.map { $0.end - $0.start }.filter { $0 != 0 }
        let median = min(0.7, Self.median(durations))
        let longest = median * 2
        if !durations.isEmpty {
            // Words at sentence boundaries are at most twice the median word.
            for i in 1..<max(1, alignment.count) where alignment[i].end - alignment[i].start > longest {
                if Self.isIn(alignment[i].word, Self.sentenceEnds) {
                    alignment[i].end = alignment[i].start + longest
                } else if Self.isIn(alignment[i - 1].word, Self.sentenceEnds) {
                    alignment[i].start = alignment[i].end - longest
                }
            }
        }
        Self.mergePunctuation(&alignment)

        var lastSpeech = lastSpeechTime
        var wordIndex = 0
        for p in pieces.indices {
            var saved = 0
            var words: [TranscriptionWord] = []
            while wordIndex < alignment.count && saved < perPiece[p].count {
                let timing = alignment[wordIndex]
                if !timing.word.isEmpty {
                    words.append(TranscriptionWord(start: Self.round2(timeOffset + timing.start), end: Self.round2(timeOffset + timing.end),
                                                   word: timing.word, probability: timing.probability))
                }
                saved += timing.tokens.count
                wordIndex += 1
            }
            if !words.isEmpty {
                // The first and second word after a pause are at most twice the median word.
                if words[0].end - lastSpeech > median * 4
                    && (words[0].end - words[0].start > longest || (words.count > 1 && words[1].end - words[0].start > longest * 2)) {
                    if words.count > 1 && words[1].end - words[1].start > longest {
                        let boundary = max(words[1].end / 2, words[1].end - longest)
                        words[0].end = boundary
                        words[1].start = boundary
                    }
                    words[0].start = max(0, words[0].end - longest)
                }
                // The segment's own times win over a first or last word that runs long.
                if pieces[p].start < words[0].end && pieces[p].start - 0.5 > words[0].start {
                    words[0].start = max(0, min(words[0].end - median, pieces[p].start))
                } else {
                    pieces[p].start = words[0].start
                }
                let last = words.count - 1
                if pieces[p].end > words[last].start && pieces[p].end + 0.5 < words[last].end {
                    words[last].end = max(words[last].start + median, pieces[p].end)
                } else {
                    pieces[p].end = words[last].end
                }
                lastSpeech = pieces[p].end
            }
            pieces[p].words = words
        }
    }

    /// The end of the last word of the pieces, else the end of the last piece.
    static func lastEnd(_ pieces: [Transcriber.Piece]) -> Double? {
        for piece in pieces.reversed() { if let word = piece.words.last { return word.end } }
        return pieces.last?.end
    }

    /// Each word of `text` (a window's text tokens) with its tokens, times and probability.
    func align(_ text: [Int], decoding: WhisperModel.Decoding, frames: Int) throws -> [Timing] {
        let positions = frames / 2
        guard !text.isEmpty, positions > 0 else { return [] }
        let t = tokenizer, d = model.dimensions
        let input = sotSequence + [t.noTimestamps] + text + [t.endOfText]
        guard input.count <= d.textContext else { return [] }
        let sequence = decoding.appendSequence()
        let capture = WhisperModel.CrossAttentionCapture(heads: heads, positions: d.audioContext)
        let logits = try model.decode(input, sequences: Array(repeating: sequence, count: input.count), in: decoding,
                                      logitsOf: Array(sotSequence.count..<(sotSequence.count + text.count)), capture: capture)
        // Each text token's probability among the text tokens.
        let probabilities = zip(logits, text).map { row, token in
            row.withUnsafeBufferPointer { Float(Foundation.exp($0[token] - Sampling.logSumExp(UnsafeBufferPointer(rebasing: $0[..<t.endOfText])))) }
        }
        let matrix = Self.alignmentMatrix(capture, rows: input.count, positions: positions,
                                          from: sotSequence.count, count: text.count + 1)
        let path = Self.negativeDTW(matrix, rows: text.count + 1, columns: positions)

        let (words, wordTokens) = splitToWordTokens(text + [t.endOfText])
        guard wordTokens.count > 1 else { return [] }
        var jumpTimes: [Double] = []
        for (k, step) in path.enumerated() where k == 0 || step.row != path[k - 1].row {
            jumpTimes.append(Double(step.column) / Self.positionsPerSecond)
        }
        var boundaries = [0]
        for tokens in wordTokens.dropLast() { boundaries.append(boundaries.last! + tokens.count) }
        return (0..<(words.count - 1)).map { w in
            let (i, j) = (boundaries[w], boundaries[w + 1])
            let span = probabilities[i..<min(j, probabilities.count)]
            let probability = span.isEmpty ? Float.nan : span.reduce(0, +) / Float(span.count)
            return Timing(word: words[w], tokens: wordTokens[w], start: jumpTimes[i], end: jumpTimes[j], probability: Double(probability))
        }
    }

    /// The heads' attention weights over the first `positions` audio positions, each row a
    /// softmax over them; standardized across all `rows` tokens for each head and position,
    /// median-filtered (width 7) along the positions, averaged over the heads; rows
    /// `from..<from + count` of that, row-major.
    static func alignmentMatrix(_ capture: WhisperModel.CrossAttentionCapture, rows: Int, positions: Int, from: Int,
                                count: Int) -> [Float] {
        let heads = capture.heads.count, first = capture.rows - rows
        var sum = [Float](repeating: 0, count: count * positions)
        var weights = [Float](repeating: 0, count: rows * positions)
        var filtered = [Float](repeating: 0, count: positions)
        for h in 0..<heads {
            for r in 0..<rows {
                let e = capture.weights(row: first + r, headIndex: h)
                var total: Float = 0
                for f in 0..<positions { total += e[f] }
                for f in 0..<positions { weights[r * positions + f] = e[f] / total }
            }
            for f in 0..<positions {
                var s: Float = 0, squares: Float = 0
                for r in 0..<rows {
                    let x = weights[r * positions + f]
                    s += x
                    squares += x * x
                }
                let mean = s / Float(rows)
                let variance = max(squares / Float(rows) - mean * mean, 0)
                let scale = 1 / variance.squareRoot()
                for r in 0..<rows { weights[r * positions + f] = (weights[r * positions + f] - mean) * scale }
            }
            for r in from..<(from + count) {
                weights.withUnsafeBufferPointer { medianFilter(UnsafeBufferPointer(rebasing: $0[(r * positions)..<((r + 1) * positions)]), into: &filtered) }
                for f in 0..<positions { sum[(r - from) * positions + f] += filtered[f] }
            }
        }
        return sum.map { $0 / Float(heads) }
    }

    /// A median over 7 neighbours, the edges mirrored (x[-1] = x[1]); short rows unchanged.
    public static func medianFilter(_ x: UnsafeBufferPointer<Float>, into output: inout [Float], width: Int = 7) {
        let n = x.count, half = width / 2
        guard n > half else {
            for i in 0..<n { output[i] = x[i] }
            return
        }
        var window = [Float](repeating: 0, count: width)
        for j in 0..<n {
            for k in -half...half {
                var read = abs(j + k)
                if read >= n { read = n - (read - n) - 2 }
                window[k + half] = x[read]
            }
            window.sort()
            output[j] = window[half]
        }
    }

    /// The path from (0, 0) to (rows − 1, columns − 1), one step down, right or both at a
    /// time, that maximizes the sum of the matrix along it.
    public static func negativeDTW(_ x: [Float], rows n: Int, columns m: Int) -> [(row: Int, column: Int)] {
        var cost = [Float](repeating: .infinity, count: (n + 1) * (m + 1))
        var trace = [Int8](repeating: -1, count: (n + 1) * (m + 1))
        let w = m + 1
        cost[0] = 0
        for j in 1...m {
            for i in 1...n {
                let c0 = cost[(i - 1) * w + j - 1], c1 = cost[(i - 1) * w + j], c2 = cost[i * w + j - 1]
                let (c, t): (Float, Int8) = c0 < c1 && c0 < c2 ? (c0, 0) : (c1 < c0 && c1 < c2 ? (c1, 1) : (c2, 2))
                cost[i * w + j] = -x[(i - 1) * m + (j - 1)] + c
                trace[i * w + j] = t
            }
        }
        for k in 0...m { trace[k] = 2 }
        for k in 0...n { trace[k * w] = 1 }
        var path: [(row: Int, column: Int)] = []
        var (i, j) = (n, m)
        while i > 0 || j > 0 {
            path.append((i - 1, j - 1))
            switch trace[i * w + j] {
            case 0: i -= 1; j -= 1
            case 1: i -= 1
            default: j -= 1
            }
        }
        return path.reversed()
    }

    /// Words and their tokens: at spaces and punctuation, or for languages written without
    /// spaces at every whole character.
    func splitToWordTokens(_ tokens: [Int]) -> ([String], [[Int]]) {
        let (subwords, subwordTokens) = splitOnUnicode(tokens)
        if ["zh", "ja", "th", "lo", "my", "yue"].contains(language) { return (subwords, subwordTokens) }
        var words: [String] = [], wordTokens: [[Int]] = []
        for (subword, pieceTokens) in zip(subwords, subwordTokens) {
            let special = pieceTokens[0] >= tokenizer.endOfText
            let withSpace = subword.hasPrefix(" ")
            let punctuation = Self.isIn(subword.trimmingCharacters(in: .whitespacesAndNewlines), Self.asciiPunctuation)
            if special || withSpace || punctuation || words.isEmpty {
                words.append(subword)
                wordTokens.append(pieceTokens)
            } else {
                words[words.count - 1] += subword
                wordTokens[wordTokens.count - 1] += pieceTokens
            }
        }
        return (words, wordTokens)
    }

    /// Tokens grouped so that each group decodes to whole characters.
    func splitOnUnicode(_ tokens: [Int]) -> ([String], [[Int]]) {
        let replacement: Unicode.Scalar = "\u{FFFD}"
        let full = Array(tokenizer.decode(tokens).unicodeScalars)
        var words: [String] = [], wordTokens: [[Int]] = [], current: [Int] = []
        var offset = 0
        for token in tokens {
            current.append(token)
            let decoded = tokenizer.decode(current)
            let scalars = Array(decoded.unicodeScalars)
            let index = scalars.firstIndex(of: replacement).map { $0 + offset }
            if index == nil || (index! < full.count && full[index!] == replacement) {
                words.append(decoded)
                wordTokens.append(current)
                current = []
                offset += scalars.count
            }
        }
        return (words, wordTokens)
    }

    /// Punctuation joins its neighbour: an opening mark the word after it, a closing one the
    /// word before it; the mark's own entry is left empty.
    public static func mergePunctuation(_ alignment: inout [Timing]) {
        var i = alignment.count - 2, j = alignment.count - 1
        while i >= 0 {
            if alignment[i].word.hasPrefix(" ") && isIn(alignment[i].word.trimmingCharacters(in: .whitespacesAndNewlines), prepended) {
                alignment[j].word = alignment[i].word + alignment[j].word
                alignment[j].tokens = alignment[i].tokens + alignment[j].tokens
                alignment[i].word = ""
                alignment[i].tokens = []
            } else {
                j = i
            }
            i -= 1
        }
        i = 0
        j = 1
        while j < alignment.count {
            if !alignment[i].word.hasSuffix(" ") && isIn(alignment[j].word, appended) {
                alignment[i].word += alignment[j].word
                alignment[i].tokens += alignment[j].tokens
                alignment[j].word = ""
                alignment[j].tokens = []
            } else {
                i = j
            }
            j += 1
        }
    }

    /// Python's `a in b` for strings: `a` occurs in `b` (the empty string always does).
    static func isIn(_ a: String, _ b: String) -> Bool {
        a.isEmpty || b.contains(a)
    }

    /// numpy's median: the middle value, or the mean of the two middle ones; 0 for none.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted(), n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    /// Python's `round(x, 2)`.
    static func round2(_ x: Double) -> Double {
        (x * 100).rounded(.toNearestOrEven) / 100
    }
}
