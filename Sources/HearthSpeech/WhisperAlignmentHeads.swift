extension WhisperSettings {
    /// The sizes that tell OpenAI's Whisper models apart.
    struct ModelSizes: Hashable {
        let encoderLayers: Int
        let decoderLayers: Int
        let width: Int
        let vocabularySize: Int
    }

    /// The alignment heads OpenAI published for each of its models (openai-whisper's
    /// `_ALIGNMENT_HEADS`; whisper.cpp carries them as `g_aheads`), keyed by the model's sizes,
    /// for files that do not name their own (whisper.cpp's, and Hugging Face folders without
    /// `alignment_heads`). Large v1 and v2 have the same sizes and different heads, so neither is
    /// here: they get the default heads.
    static let publishedAlignmentHeads: [ModelSizes: [(layer: Int, head: Int)]] = [
        // tiny.en, tiny
        ModelSizes(encoderLayers: 4, decoderLayers: 4, width: 384, vocabularySize: 51864):
            [(1, 0), (2, 0), (2, 5), (3, 0), (3, 1), (3, 2), (3, 3), (3, 4)],
        ModelSizes(encoderLayers: 4, decoderLayers: 4, width: 384, vocabularySize: 51865):
            [(2, 2), (3, 0), (3, 2), (3, 3), (3, 4), (3, 5)],
        // base.en, base
        ModelSizes(encoderLayers: 6, decoderLayers: 6, width: 512, vocabularySize: 51864):
            [(3, 3), (4, 7), (5, 1), (5, 5), (5, 7)],
        ModelSizes(encoderLayers: 6, decoderLayers: 6, width: 512, vocabularySize: 51865):
            [(3, 1), (4, 2), (4, 3), (4, 7), (5, 1), (5, 2), (5, 4), (5, 6)],
        // small.en, small
        ModelSizes(encoderLayers: 12, decoderLayers: 12, width: 768, vocabularySize: 51864):
            [(6, 6), (7, 0), (7, 3), (7, 8), (8, 2), (8, 5), (8, 7), (9, 0), (9, 4), (9, 8), (9, 10), (10, 0), (10, 1),
             (10, 2), (10, 3), (10, 6), (10, 11), (11, 2), (11, 4)],
        ModelSizes(encoderLayers: 12, decoderLayers: 12, width: 768, vocabularySize: 51865):
            [(5, 3), (5, 9), (8, 0), (8, 4), (8, 7), (8, 8), (9, 0), (9, 7), (9, 9), (10, 5)],
        // medium.en, medium
        ModelSizes(encoderLayers: 24, decoderLayers: 24, width: 1024, vocabularySize: 51864):
            [(11, 4), (14, 1), (14, 12), (14, 14), (15, 4), (16, 0), (16, 4), (16, 9), (17, 12), (17, 14), (18, 7),
             (18, 10), (18, 15), (20, 0), (20, 3), (20, 9), (20, 14), (21, 12)],
        ModelSizes(encoderLayers: 24, decoderLayers: 24, width: 1024, vocabularySize: 51865):
            [(13, 15), (15, 4), (15, 15), (16, 1), (20, 0), (23, 4)],
        // large-v3, large-v3-turbo
        ModelSizes(encoderLayers: 32, decoderLayers: 32, width: 1280, vocabularySize: 51866):
            [(7, 0), (10, 17), (12, 18), (13, 12), (16, 1), (17, 14), (19, 11), (21, 4), (24, 1), (25, 6)],
        ModelSizes(encoderLayers: 32, decoderLayers: 4, width: 1280, vocabularySize: 51866):
            [(2, 4), (2, 11), (3, 3), (3, 6), (3, 11), (3, 14)],
    ]

    /// The published heads of the model with sizes `d`, else the default ones.
    static func alignmentHeads(for d: WhisperDimensions) -> [(layer: Int, head: Int)] {
        let sizes = ModelSizes(encoderLayers: d.encoderLayers, decoderLayers: d.decoderLayers, width: d.width,
                               vocabularySize: d.vocabularySize)
        return publishedAlignmentHeads[sizes] ?? defaultAlignmentHeads(d)
    }
}
