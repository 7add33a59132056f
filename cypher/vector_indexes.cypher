// The vector indexes hippo owns, with their dimension and label (to rebuild one whose
// dimension is stale, or one left on the records by a store of schema version 1).
SHOW VECTOR INDEXES YIELD name, options, labelsOrTypes
WHERE name IN ['passage_embedding', 'entity_embedding', 'fact_embedding']
RETURN name, options.indexConfig.`vector.dimensions` AS dim, labelsOrTypes AS labels
