-- The exact-count workload for the sqlite3 shell (test/corpus/exact-counts-sqlite.test.ts): deterministic (no
-- random(), no clock), run on a file database in WAL mode so the pager, the WAL and the OS layer work too.
PRAGMA journal_mode = WAL;
PRAGMA foreign_keys = ON;
CREATE TABLE author(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, born INTEGER, meta TEXT);
CREATE TABLE book(
  id INTEGER PRIMARY KEY,
  author_id INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE,
  title TEXT NOT NULL,
  year INTEGER,
  price REAL,
  tags TEXT
);
CREATE TABLE sales(book_id INTEGER, day TEXT, qty INTEGER, PRIMARY KEY(book_id, day)) WITHOUT ROWID;
CREATE TABLE audit(at INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT, book_id INTEGER);
CREATE TRIGGER book_ins AFTER INSERT ON book BEGIN
  INSERT INTO audit(what, book_id) VALUES ('insert', new.id);
END;
CREATE TRIGGER book_upd AFTER UPDATE OF price ON book WHEN new.price > old.price BEGIN
  INSERT INTO audit(what, book_id) VALUES ('raise ' || printf('%.2f', new.price - old.price), new.id);
END;

BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
INSERT INTO author(name, born, meta)
  SELECT 'author ' || i, 1900 + (i * 7) % 100,
         json_object('country', CASE i % 4 WHEN 0 THEN 'fr' WHEN 1 THEN 'de' WHEN 2 THEN 'jp' ELSE 'br' END,
                     'prizes', json_array(i % 3, i % 5))
  FROM n;
COMMIT;

BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
INSERT INTO book(author_id, title, year, price, tags)
  SELECT 1 + (i * 13) % 40, 'The ' || substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26, 3) || ' of ' || i,
         1950 + (i * 11) % 70, round(5 + (i * 37) % 4000 / 100.0, 2),
         json_array(CASE WHEN i % 2 THEN 'novel' ELSE 'essay' END, 'tag' || (i % 9))
  FROM n;
COMMIT;

BEGIN;
WITH RECURSIVE d(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM d WHERE k < 29)
INSERT INTO sales(book_id, day, qty)
  SELECT b.id, date('2024-01-01', '+' || d.k || ' days'), (b.id * 7 + d.k * 3) % 11
  FROM book b, d WHERE (b.id + d.k) % 5 = 0;
SAVEPOINT s1;
UPDATE book SET price = price * 1.1 WHERE year < 1960;
ROLLBACK TO s1;
UPDATE book SET price = price + 1 WHERE id % 17 = 0;
RELEASE s1;
COMMIT;

CREATE INDEX book_author ON book(author_id, year);
CREATE INDEX book_title ON book(title COLLATE NOCASE);
CREATE INDEX author_country ON author(json_extract(meta, '$.country'));
ANALYZE;

CREATE VIEW author_stats AS
  SELECT a.name, count(b.id) AS books, sum(b.price) AS total, avg(b.year) AS mean_year, min(b.year), max(b.year)
  FROM author a LEFT JOIN book b ON b.author_id = a.id GROUP BY a.id;

SELECT name, books, printf('%.2f', total) FROM author_stats ORDER BY total DESC, name LIMIT 5;
SELECT json_extract(a.meta, '$.country') AS c, count(*), group_concat(DISTINCT b.year % 10)
  FROM author a JOIN book b ON b.author_id = a.id GROUP BY c HAVING count(*) > 10 ORDER BY c;
SELECT title FROM book WHERE title LIKE 'the abc%' ORDER BY id LIMIT 3;
SELECT title FROM book WHERE title GLOB '*xyz*' ORDER BY id LIMIT 3;
SELECT count(*) FROM book WHERE title LIKE '%of 1_' ESCAPE '\';
SELECT b.title, s.total FROM book b
  JOIN (SELECT book_id, sum(qty) AS total FROM sales GROUP BY book_id) s ON s.book_id = b.id
  WHERE s.total > (SELECT avg(qty) * 5 FROM sales) ORDER BY s.total DESC, b.id LIMIT 5;
SELECT id, title, rank() OVER (PARTITION BY author_id ORDER BY price DESC) AS r,
       sum(price) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS running
  FROM book WHERE author_id IN (3, 7) ORDER BY author_id, r, id LIMIT 8;
SELECT day, sum(qty), lag(sum(qty)) OVER (ORDER BY day) FROM sales GROUP BY day ORDER BY day LIMIT 5;
SELECT e.value, count(*) FROM book, json_each(book.tags) AS e GROUP BY e.value ORDER BY 2 DESC, 1 LIMIT 4;
SELECT json_group_array(name), json_group_object(name, born) FROM (SELECT name, born FROM author WHERE id <= 3);
SELECT json_set(meta, '$.prizes[0]', 99), json_remove(meta, '$.country'), json_type(meta, '$.prizes'),
       json_valid(meta), json_array_length(meta, '$.prizes') FROM author WHERE id = 5;
SELECT * FROM json_tree('{"a":[1,2,{"b":null}],"c":"x"}') ORDER BY id;

WITH RECURSIVE fib(a, b, n) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a + b, n + 1 FROM fib WHERE n < 60)
SELECT max(a) FROM fib;
WITH RECURSIVE tree(id, depth, path) AS (
  SELECT 1, 0, '1'
  UNION ALL
  SELECT t.id * 2 + c.k, t.depth + 1, t.path || '/' || (t.id * 2 + c.k)
  FROM tree t, (SELECT 0 AS k UNION ALL SELECT 1) c WHERE t.depth < 6
)
SELECT depth, count(*), max(length(path)) FROM tree GROUP BY depth ORDER BY depth;

CREATE VIRTUAL TABLE doc USING fts5(title, body, tokenize = 'porter unicode61');
BEGIN;
INSERT INTO doc(title, body) SELECT title, 'Chapter ' || id || ': ' || replace(tags, '"', ' ') || ' running runners ran'
  FROM book WHERE id <= 150;
COMMIT;
SELECT count(*) FROM doc WHERE doc MATCH 'novel AND run';
SELECT title, snippet(doc, 1, '[', ']', '…', 4) FROM doc WHERE doc MATCH 'tag3 OR tag4' ORDER BY rank LIMIT 3;
SELECT highlight(doc, 0, '<', '>') FROM doc WHERE doc MATCH 'title:abc*' ORDER BY rowid LIMIT 3;
INSERT INTO doc(doc) VALUES ('optimize');

INSERT INTO author(name, born) VALUES ('author 3', 1999)
  ON CONFLICT(name) DO UPDATE SET born = excluded.born;
DELETE FROM author WHERE id = 40;
SELECT count(*) FROM book;
ALTER TABLE book ADD COLUMN isbn TEXT;
UPDATE book SET isbn = printf('978-%010d', id * 7919) WHERE id % 3 = 0;
SELECT upper(title), lower(title), length(isbn), instr(title, 'of'), substr(isbn, 5, 3), hex(id), quote(price),
       coalesce(isbn, 'none'), typeof(price), abs(-id), round(price), trim('  x  '), ltrim('xxa', 'x')
  FROM book WHERE id BETWEEN 10 AND 12 ORDER BY id;
SELECT date('2024-02-28', '+1 day'), strftime('%Y-%j', '2023-12-31'), julianday('2000-01-01'),
       datetime(86400 * 365, 'unixepoch'), time('12:34:56', '+90 minutes');
SELECT sqrt(2), pow(2, 10), ln(10), floor(2.5), ceil(2.5), pi(), log10(1000);
SELECT a.name FROM author a WHERE NOT EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id AND b.year > 2010)
  ORDER BY a.id LIMIT 3;
SELECT year FROM book WHERE id < 20 UNION SELECT born FROM author WHERE id < 5 EXCEPT SELECT 1999 ORDER BY 1 LIMIT 5;
SELECT max(at), count(*) FROM audit;
PRAGMA integrity_check;
PRAGMA wal_checkpoint(TRUNCATE);
