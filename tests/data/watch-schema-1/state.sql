BEGIN TRANSACTION;
CREATE TABLE decisions(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL, delivered INTEGER NOT NULL DEFAULT 0);
INSERT INTO "decisions" VALUES(1,'runs/a','{"run": "runs/a", "name": "a", "path": "runs/a", "metric": "score", "detector": "evalstop(k=2)", "stop_step": 40, "best_step": 20, "best_value": 0.6, "evals": 4}',2);
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('settings','{"detector": "evalstop(k=2)", "metric": "score", "mode": "max"}');
CREATE TABLE positions(
    source TEXT PRIMARY KEY, run TEXT NOT NULL, position TEXT NOT NULL);
INSERT INTO "positions" VALUES('runs/a/metrics.jsonl','runs/a','137');
INSERT INTO "positions" VALUES('runs/b/metrics.jsonl','runs/b','81');
INSERT INTO "positions" VALUES('runs/c/log.csv','runs/c','[32, ["step", "score"]]');
CREATE TABLE runs(run TEXT PRIMARY KEY, monitor TEXT NOT NULL);
INSERT INTO "runs" VALUES('runs/a','{"format":"evalstop.live.monitor/1","mode":"max","detector":{"name":"evalstop(k=2)","type":"DeclineDetector","params":{"k":2,"min_delta":0.0,"warmup_steps":0}},"next_serial":1,"jobs":[{"job":"run","serial":0,"last_step":40,"seen":4,"rule":{"declines":2,"previous":0.5},"evals":4,"best_step":20,"best_score":0.6,"fired_step":40}]}');
INSERT INTO "runs" VALUES('runs/b','{"format":"evalstop.live.monitor/1","mode":"max","detector":{"name":"evalstop(k=2)","type":"DeclineDetector","params":{"k":2,"min_delta":0.0,"warmup_steps":0}},"next_serial":1,"jobs":[{"job":"run","serial":0,"last_step":30,"seen":3,"rule":{"declines":0,"previous":0.4},"evals":3,"best_step":30,"best_score":0.4,"fired_step":null}]}');
INSERT INTO "runs" VALUES('runs/c','{"format":"evalstop.live.monitor/1","mode":"max","detector":{"name":"evalstop(k=2)","type":"DeclineDetector","params":{"k":2,"min_delta":0.0,"warmup_steps":0}},"next_serial":1,"jobs":[{"job":"run","serial":0,"last_step":30,"seen":3,"rule":{"declines":0,"previous":0.4},"evals":3,"best_step":30,"best_score":0.4,"fired_step":null}]}');
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('decisions',1);
COMMIT;
