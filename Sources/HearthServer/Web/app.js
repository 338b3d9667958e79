// Hearth web chat
