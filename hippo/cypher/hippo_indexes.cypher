// The full-text and vector indexes hippo's reads need, with their state (ONLINE, POPULATING,
// FAILED); a name missing from the result is an index the database does not have.
SHOW INDEXES YIELD name, type, state, populationPercent
WHERE name IN ['passage_text', 'passage_words', 'passage_embedding', 'entity_embedding', 'fact_embedding']
RETURN name, type, state, populationPercent
