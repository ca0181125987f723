-- The servers' databases, made once when the postgres container first starts. The
-- passwords are replaced at start from team.env (psql variables); see compose.yaml.
\set mlflow_password `echo "$MLFLOW_DB_PASSWORD"`
\set prefect_password `echo "$PREFECT_DB_PASSWORD"`
CREATE ROLE mlflow LOGIN PASSWORD :'mlflow_password';
CREATE DATABASE mlflow OWNER mlflow;
CREATE DATABASE mlflow_auth OWNER mlflow;
CREATE ROLE prefect LOGIN PASSWORD :'prefect_password';
CREATE DATABASE prefect OWNER prefect;
