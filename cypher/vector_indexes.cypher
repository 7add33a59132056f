// The vector indexes hippo owns, with their dimension (to rebuild one whose dimension is stale).
SHOW VECTOR INDEXES YIELD name, options
WHERE name IN ['passage_embedding', 'entity_embedding', 'fact_embedding']
RETURN name, options.indexConfig.`vector.dimensions` AS dim
