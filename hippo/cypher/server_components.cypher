// Name, version and edition of the server (the store refuses Neo4j older than 5.26).
CALL dbms.components() YIELD name, versions, edition
RETURN name, versions, edition
