/// What kind of token a vocabulary entry is (`tokenizer.ggml.token_type`).
public enum TokenType: Int32, Sendable, CaseIterable {
    /// Not given.
    case undefined = 0
    /// Ordinary text.
    case normal = 1
    /// The unknown token.
    case unknown = 2
    /// A control token such as BOS, EOS or `<|im_start|>`; its text is matched in input only
    /// when special tokens are parsed.
    case control = 3
    /// A token added by the model's authors (`\n\n`, `<a>`); its text is always matched as a whole.
    case userDefined = 4
    /// A reserved slot.
    case unused = 5
    /// One raw byte, spelled `<0xXX>`.
    case byte = 6

    /// The type for a stored number; numbers outside the list are `undefined`.
    public init(storedValue: Int) {
        self = Int32(exactly: storedValue).flatMap(TokenType.init(rawValue:)) ?? .undefined
    }
}

/// The special-token ids and flags a vocabulary's metadata gives.
public struct SpecialTokens: Sendable, Equatable {
    /// Beginning of sequence (`tokenizer.ggml.bos_token_id`).
    public var bos: Int32?
    /// End of sequence (`tokenizer.ggml.eos_token_id`).
    public var eos: Int32?
    /// End of turn (`tokenizer.ggml.eot_token_id`); found by its text when not given.
    public var eot: Int32?
    /// End of message (`tokenizer.ggml.eom_token_id`); found by its text when not given.
    public var eom: Int32?
    /// Unknown (`tokenizer.ggml.unknown_token_id`).
    public var unknown: Int32?
    /// Padding (`tokenizer.ggml.padding_token_id`).
    public var padding: Int32?
    /// Whether encoding with `addSpecial` puts BOS first (`tokenizer.ggml.add_bos_token`).
    public var addBOS: Bool
    /// Whether encoding with `addSpecial` puts EOS last (`tokenizer.ggml.add_eos_token`).
    public var addEOS: Bool

    /// Special tokens as given; leave out what the vocabulary does not have.
    public init(bos: Int32? = nil, eos: Int32? = nil, eot: Int32? = nil, eom: Int32? = nil,
                unknown: Int32? = nil, padding: Int32? = nil, addBOS: Bool = false, addEOS: Bool = false) {
        self.bos = bos
        self.eos = eos
        self.eot = eot
        self.eom = eom
        self.unknown = unknown
        self.padding = padding
        self.addBOS = addBOS
        self.addEOS = addEOS
    }
}
