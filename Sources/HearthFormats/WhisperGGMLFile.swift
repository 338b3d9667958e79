import Foundation
import HearthCore

/// whisper.cpp's hyperparameters, the eleven int32s after the magic, in file order.
public struct WhisperGGMLHyperparameters: Sendable, Equatable {
    /// Tokens the model scores (`n_vocab`): 51864 English-only, 51865 multilingual, 51866
    /// with large v3's hundredth language.
    public let vocabularySize: Int
    /// Encoder positions (`n_audio_ctx`, 1500).
    public let audioContext: Int
    /// Encoder width (`n_audio_state`).
    public let audioWidth: Int
    /// Encoder attention heads (`n_audio_head`).
    public let audioHeads: Int
    /// Encoder layers (`n_audio_layer`).
    public let audioLayers: Int
    /// Decoder positions (`n_text_ctx`, 448).
    public let textContext: Int
    /// Decoder width (`n_text_state`).
    public let textWidth: Int
    /// Decoder attention heads (`n_text_head`).
    public let textHeads: Int
    /// Decoder layers (`n_text_layer`).
    public let textLayers: Int
    /// Mel bands of the input (`n_mels`: 80, or 128 for large v3).
    public let melCount: Int
    /// The weight type the file was written with (`ftype` less its quantization version):
    /// 0 all F32, 1 mostly F16, 2 mostly Q4_0, 3 Q4_1, 7 Q8_0, 8 Q5_0, 9 Q5_1. Each tensor
    /// names its own type, so this is informative only.
    public let fileType: Int
    /// The quantization version (`ftype / 1000`); 0 for files that were never quantized.
    public let quantizationVersion: Int
}

/// One tensor of a whisper.cpp file: its name, shape, type and where its bytes lie.
public struct WhisperGGMLTensor: Sendable, Equatable {
    /// The name in OpenAI's checkpoint, such as `encoder.blocks.0.attn.query.weight`.
    public let name: String
    /// Sizes, outermost first as PyTorch wrote them (the file lists them innermost first).
    public let shape: [Int]
    /// The element type: F32, F16, or a quantized block type.
    public let type: GGMLType
    /// Byte range of the data from the start of the file.
    public let bytes: Range<Int>

    /// Number of elements.
    public var elementCount: Int { shape.reduce(1, *) }
}

/// A whisper.cpp model file (`ggml-base.bin`), memory-mapped, in the layout of its
/// `convert-pt-to-ggml.py`: the magic `ggml`, the hyperparameters, the mel filter bank
/// (bands, bins, then floats), the text vocabulary (a count, then each token's byte length and
/// raw bytes, its rank being its id), then tensors until the end of the file, each a header
/// (rank, name length, GGML type, sizes innermost first, name) and its data, unpadded.
///
/// Every count and length is checked against the bytes that remain, and every tensor's byte
/// count against its type and shape; anything else is a `HearthError.invalidModelFile` that
/// names the problem. All integers are little-endian.
public final class WhisperGGMLFile: MappedModelFile, Sendable {
    /// The first four bytes of every whisper.cpp file: "ggml" as a little-endian int32, so
    /// the file starts with the bytes `lmgg`.
    public static let magic: UInt32 = 0x6767_6D6C

    /// The model's sizes.
    public let hyperparameters: WhisperGGMLHyperparameters
    /// Rows of the mel filter bank (one per band).
    public let melFilterBands: Int
    /// Columns of the mel filter bank (FFT bins, 201 for Whisper's 400-point FFT).
    public let melFilterBins: Int
    /// Where the filter bank's float32s lie in the file, band-major.
    public let melFilters: Range<Int>
    /// Where each text token's bytes lie in the file; the index is the token's id.
    public let tokens: [Range<Int>]
    /// Tensors in file order.
    public let tensors: [WhisperGGMLTensor]
    /// The mapping that tensor and token views point into.
    public let mapping: MappedFile

    private let index: [String: Int]

    /// Whether the file at `url` starts with whisper.cpp's magic (false when it cannot be read).
    public static func hasMagic(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 4), head.count == 4 else { return false }
        return head.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) } == magic
    }

    /// Reads the file in an existing mapping.
    public init(mapping: MappedFile) throws {
        self.mapping = mapping
        var reader = ByteReader(mapping.bytes, path: mapping.path)
        let magic = try reader.read(UInt32.self, "the magic")
        guard magic == Self.magic else {
            throw reader.invalid("it does not start with whisper.cpp's magic \"ggml\" (0x67676d6c); it is not a whisper.cpp model file")
        }
        func positive(_ what: String) throws -> Int {
            let value = try reader.read(Int32.self, what)
            guard value > 0 else { throw reader.invalid("its \(what) is \(value); it must be positive") }
            return Int(value)
        }
        let vocabularySize = try positive("n_vocab")
        let audioContext = try positive("n_audio_ctx")
        let audioWidth = try positive("n_audio_state")
        let audioHeads = try positive("n_audio_head")
        let audioLayers = try positive("n_audio_layer")
        let textContext = try positive("n_text_ctx")
        let textWidth = try positive("n_text_state")
        let textHeads = try positive("n_text_head")
        let textLayers = try positive("n_text_layer")
        let melCount = try positive("n_mels")
        let ftype = try reader.read(Int32.self, "ftype")
        guard ftype >= 0 else { throw reader.invalid("its ftype is \(ftype); it must not be negative") }
        // Quantized files add the quantization version times 1000 (GGML_QNT_VERSION_FACTOR).
        hyperparameters = WhisperGGMLHyperparameters(
            vocabularySize: vocabularySize, audioContext: audioContext, audioWidth: audioWidth, audioHeads: audioHeads,
            audioLayers: audioLayers, textContext: textContext, textWidth: textWidth, textHeads: textHeads,
            textLayers: textLayers, melCount: melCount, fileType: Int(ftype % 1000), quantizationVersion: Int(ftype / 1000))

        melFilterBands = try positive("mel filter band count")
        melFilterBins = try positive("mel filter bin count")
        let (filterCount, filterOverflow) = melFilterBands.multipliedReportingOverflow(by: melFilterBins * 4)
        guard !filterOverflow else { throw reader.invalid("its mel filter bank of \(melFilterBands) × \(melFilterBins) is too large") }
        try reader.need(filterCount, for: "the \(melFilterBands) × \(melFilterBins) mel filters")
        melFilters = reader.offset..<reader.offset + filterCount
        reader.offset += filterCount

        let tokenCount = try reader.read(Int32.self, "the vocabulary's token count")
        // Each token takes at least its 4-byte length.
        guard tokenCount >= 0, Int(tokenCount) <= reader.remaining / 4 else {
            throw reader.invalid("truncated: it claims \(tokenCount) tokens but only \(reader.remaining) bytes remain")
        }
        var tokens: [Range<Int>] = []
        tokens.reserveCapacity(Int(tokenCount))
        for id in 0..<Int(tokenCount) {
            let length = Int(try reader.read(UInt32.self, "the length of token \(id)"))
            try reader.need(length, for: "the bytes of token \(id)")
            tokens.append(reader.offset..<reader.offset + length)
            reader.offset += length
        }
        self.tokens = tokens

        var tensors: [WhisperGGMLTensor] = []
        var index: [String: Int] = [:]
        // Tensors run to the end of the file; whisper.cpp stops at the first header it cannot read.
        while reader.remaining > 0 {
            let number = tensors.count
            let rank = try reader.read(Int32.self, "the rank of tensor \(number)")
            guard (1...4).contains(rank) else {
                throw reader.invalid("tensor \(number) has rank \(rank); GGML tensors have 1 to 4 dimensions")
            }
            let nameLength = try reader.read(Int32.self, "the name length of tensor \(number)")
            guard nameLength > 0 else { throw reader.invalid("tensor \(number) has a name of \(nameLength) bytes") }
            let typeID = try reader.read(Int32.self, "the type of tensor \(number)")
            guard typeID >= 0, let type = GGMLType(rawValue: UInt32(typeID)) else {
                throw reader.invalid("tensor \(number) has GGML type id \(typeID), which Hearth does not know")
            }
            var sizes: [Int] = []
            var elements = 1
            for axis in 0..<Int(rank) {
                let size = try reader.read(Int32.self, "dimension \(axis) of tensor \(number)")
                guard size > 0 else { throw reader.invalid("tensor \(number) has dimension \(axis) of size \(size)") }
                let (product, overflow) = elements.multipliedReportingOverflow(by: Int(size))
                guard !overflow else { throw reader.invalid("tensor \(number) is too large") }
                elements = product
                sizes.append(Int(size))
            }
            try reader.need(Int(nameLength), for: "the name of tensor \(number)")
            let nameBytes = UnsafeRawBufferPointer(rebasing: reader.bytes[reader.offset..<reader.offset + Int(nameLength)])
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw reader.invalid("the name of tensor \(number) at offset \(reader.offset) is not UTF-8")
            }
            reader.offset += Int(nameLength)
            // Quantized blocks run along a row, so a row must hold whole blocks.
            guard sizes[0] % type.blockSize == 0, let byteCount = type.byteCount(elements: elements) else {
                throw reader.invalid("tensor \(name) has rows of \(sizes[0]) elements, not a whole number of \(type.name) blocks of \(type.blockSize)")
            }
            try reader.need(byteCount, for: "the data of \(name) (\(sizes.reversed().map(String.init).joined(separator: " × ")) \(type.name))")
            guard index[name] == nil else { throw reader.invalid("tensor \(name) appears twice") }
            index[name] = tensors.count
            tensors.append(WhisperGGMLTensor(name: name, shape: sizes.reversed(), type: type,
                                             bytes: reader.offset..<reader.offset + byteCount))
            reader.offset += byteCount
        }
        self.tensors = tensors
        self.index = index
    }

    /// The tensor called `name`, if there is one.
    public func tensor(named name: String) -> WhisperGGMLTensor? {
        index[name].map { tensors[$0] }
    }

    /// The bytes of `tensor`, inside the mapping.
    public func data(for tensor: WhisperGGMLTensor) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: mapping.bytes[tensor.bytes])
    }

    /// The raw bytes of text token `id` (not necessarily UTF-8: a token may hold part of a
    /// character), inside the mapping.
    public func tokenBytes(_ id: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: mapping.bytes[tokens[id]])
    }
}
