-- The server's schema version 1 (before Alembic), as SQLite created it; used to test upgrades.
CREATE TABLE schema_version (
	version INTEGER NOT NULL, 
	applied_at DATETIME NOT NULL, 
	PRIMARY KEY (version)
);
CREATE TABLE api_keys (
	id VARCHAR(16) NOT NULL, 
	name VARCHAR(120) NOT NULL, 
	salt VARCHAR(64) NOT NULL, 
	key_hash VARCHAR(128) NOT NULL, 
	created_at DATETIME NOT NULL, 
	revoked_at DATETIME, 
	last_used_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_api_keys_name ON api_keys (name);
CREATE TABLE requests (
	id VARCHAR(32) NOT NULL, 
	created_at DATETIME NOT NULL, 
	method VARCHAR(8) NOT NULL, 
	path VARCHAR(300) NOT NULL, 
	key_name VARCHAR(120), 
	status_code INTEGER NOT NULL, 
	duration_ms FLOAT NOT NULL, 
	items INTEGER NOT NULL, 
	job_id VARCHAR(32), 
	PRIMARY KEY (id)
);
CREATE INDEX ix_requests_created_at ON requests (created_at);
CREATE TABLE jobs (
	id VARCHAR(32) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	key_name VARCHAR(120) NOT NULL, 
	request_id VARCHAR(32), 
	options JSON NOT NULL, 
	total INTEGER NOT NULL, 
	done INTEGER NOT NULL, 
	errors INTEGER NOT NULL, 
	restarts INTEGER NOT NULL, 
	message TEXT, 
	created_at DATETIME NOT NULL, 
	started_at DATETIME, 
	finished_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_jobs_created_at ON jobs (created_at);
CREATE INDEX ix_jobs_status ON jobs (status);
CREATE TABLE results (
	id VARCHAR(32) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	request_id VARCHAR(32), 
	job_id VARCHAR(32), 
	client_id VARCHAR(200), 
	key_name VARCHAR(120), 
	text TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	category VARCHAR(32), 
	target_group VARCHAR(120), 
	purity FLOAT, 
	result JSON NOT NULL, 
	trace JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_results_created_at ON results (created_at);
CREATE INDEX ix_results_request_id ON results (request_id);
CREATE INDEX ix_results_category ON results (category);
CREATE INDEX ix_results_status ON results (status);
CREATE INDEX ix_results_job_id ON results (job_id);
CREATE TABLE job_items (
	id INTEGER NOT NULL, 
	job_id VARCHAR(32) NOT NULL, 
	position INTEGER NOT NULL, 
	client_id VARCHAR(200), 
	text TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	attempts INTEGER NOT NULL, 
	error TEXT, 
	result_id VARCHAR(32), 
	PRIMARY KEY (id), 
	UNIQUE (job_id, position), 
	FOREIGN KEY(job_id) REFERENCES jobs (id)
);
CREATE INDEX ix_job_items_job_id ON job_items (job_id);
CREATE INDEX ix_job_items_status ON job_items (status);
CREATE TABLE review_items (
	id INTEGER NOT NULL, 
	result_id VARCHAR(32) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	category VARCHAR(32), 
	target_group VARCHAR(120), 
	original_reply TEXT NOT NULL, 
	reply TEXT NOT NULL, 
	edited BOOLEAN NOT NULL, 
	reject_reason TEXT, 
	reviewer VARCHAR(120), 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	decided_at DATETIME, 
	PRIMARY KEY (id), 
	UNIQUE (result_id), 
	FOREIGN KEY(result_id) REFERENCES results (id)
);
CREATE INDEX ix_review_items_status ON review_items (status);
CREATE INDEX ix_review_items_category ON review_items (category);
CREATE INDEX ix_review_items_created_at ON review_items (created_at);
CREATE TABLE audit_log (
	id INTEGER NOT NULL, 
	review_id INTEGER NOT NULL, 
	actor VARCHAR(120) NOT NULL, 
	action VARCHAR(16) NOT NULL, 
	at DATETIME NOT NULL, 
	"before" JSON NOT NULL, 
	"after" JSON NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(review_id) REFERENCES review_items (id)
);
CREATE INDEX ix_audit_log_review_id ON audit_log (review_id);
INSERT INTO schema_version (version, applied_at) VALUES (1, '2026-01-01 00:00:00.000000');
