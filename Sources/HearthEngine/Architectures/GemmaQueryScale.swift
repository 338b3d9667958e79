/// How Gemma 2 and Gemma 3 scale queries before attention: by 1/√headDim, except in their 27B
/// models, which Google's reference scales by 1/√(width/heads) (its `query_pre_attn_scalar`:
/// 144 for Gemma 2 27B and 168 for Gemma 3 27B, whose heads are 128 wide). A GGUF file does not
/// store the scalar, so a 27B model is known by its block count, as llama.cpp knows it; scaled
/// by 1/√128 its attention would be sharper than trained, and its answers not Gemma's.
enum GemmaQueryScale {
    /// Blocks of Gemma 2 27B (the 2B has 26, the 9B 42).
    static let gemma2_27BBlockCount = 46
    /// Blocks of Gemma 3 27B (the 270M has 18, the 1B 26, the 4B 34, the 12B 48).
    static let gemma3_27BBlockCount = 62

    /// The factor queries are multiplied by: 1/√(width/heads) for a 27B model, else 1/√headDim.
    static func value(_ c: ModelConfiguration, is27B: Bool) -> Float {
        is27B ? 1 / Float(c.embeddingLength / c.headCount).squareRoot() : 1 / Float(c.headDimension).squareRoot()
    }
}
