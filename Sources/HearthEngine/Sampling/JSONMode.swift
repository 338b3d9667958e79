import HearthConstraints
import HearthCore

extension TransformerModel {
    /// JSON mode's constraint with `recognizer` holding the answer so far (see `TokenConstraint`).
    /// `generate` builds its own when `GenerationOptions.format` is `.json`; this one is for
    /// sampling by hand and for tests.
    public func jsonConstraint(_ recognizer: JSONRecognizer = JSONRecognizer()) -> JSONTokenConstraint {
        JSONTokenConstraint(recognizer: recognizer, table: tokenByteTable())
    }

    /// The table JSON mode checks tokens with, built on first use (about 10 ms for 49,152
    /// tokens): most generations never need it.
    func tokenByteTable() -> TokenByteTable {
        jsonTable.withLock { table in
            if let table { return table }
            let built = TokenByteTable(tokenizer: tokenizer)
            table = built
            return built
        }
    }

    /// The grammar compiled against this model's vocabulary, from a small cache: a server sees
    /// the same schema again and again, and a program keeps the masks it has computed.
    public func grammarProgram(_ grammar: Grammar) -> GrammarProgram {
        let table = tokenByteTable()
        return grammarPrograms.withLock { programs in
            if let known = programs.first(where: { $0.grammar == grammar }) { return known.program }
            let program = GrammarProgram(grammar, table: table)
            programs.append((grammar, program))
            if programs.count > 16 { programs.removeFirst() }
            return program
        }
    }

    /// The grammar of a JSON Schema, from a small cache (compiling a schema costs more than
    /// looking it up, and a server sees the same schemas again and again).
    public func schemaGrammar(_ schema: JSONValue) throws -> Grammar {
        if let known = schemaGrammars.withLock({ $0.first { $0.schema == schema }?.grammar }) { return known }
        let grammar = try Grammar(jsonSchema: schema)
        schemaGrammars.withLock { cache in
            cache.append((schema, grammar))
            if cache.count > 16 { cache.removeFirst() }
        }
        return grammar
    }
}
