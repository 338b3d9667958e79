/// Sets `key` to `value` in a dictionary whose keys keep their insertion order in `keys`: a new
/// key goes at the end, an existing one keeps its place, and nil removes it from both.
func setOrdered<Key: Hashable, Element>(_ value: Element?, forKey key: Key, in storage: inout [Key: Element], keys: inout [Key]) {
    if let value {
        if storage.updateValue(value, forKey: key) == nil { keys.append(key) }
    } else if storage.removeValue(forKey: key) != nil {
        keys.removeAll { $0 == key }
    }
}
