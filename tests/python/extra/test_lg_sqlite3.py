"""sqlite3 through _sqlite3 and libsqlite3, for tests/python/run.

Debian's libpython3.11-testsuite leaves out CPython's test_sqlite3
package, so the set carries this small stand-in: a file database, a
thread per connection, user functions, aggregates, blobs, backup, dump.
"""
import os
import sqlite3
import tempfile
import threading
import unittest


class SqliteTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, 'db.sqlite')

    def tearDown(self):
        self.dir.cleanup()

    def test_file_roundtrip_wal(self):
        con = sqlite3.connect(self.path)
        self.assertEqual(con.execute('pragma journal_mode=wal').fetchone()[0], 'wal')
        con.execute('create table t (k integer primary key, v text)')
        con.executemany('insert into t (v) values (?)', [(str(i),) for i in range(1000)])
        con.commit()
        con.close()
        con = sqlite3.connect(self.path)
        self.assertEqual(con.execute('select count(*), sum(k) from t').fetchone(),
                         (1000, 500500))
        con.close()

    def test_threads(self):
        con = sqlite3.connect(self.path)
        con.execute('create table t (thread integer, n integer)')
        con.commit()
        con.close()
        errors = []

        def work(tid):
            try:
                c = sqlite3.connect(self.path, timeout=60)
                for n in range(50):
                    with c:
                        c.execute('insert into t values (?, ?)', (tid, n))
                c.close()
            except Exception as e:  # reported below, in the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        con = sqlite3.connect(self.path)
        self.assertEqual(con.execute('select count(*) from t').fetchone()[0], 200)
        con.close()

    def test_function_and_aggregate(self):
        class Concat:
            def __init__(self):
                self.parts = []

            def step(self, v):
                self.parts.append(v)

            def finalize(self):
                return ''.join(self.parts)

        con = sqlite3.connect(':memory:')
        con.create_function('twice', 1, lambda x: 2 * x, deterministic=True)
        con.create_aggregate('cat', 1, Concat)
        con.execute('create table t (v)')
        con.executemany('insert into t values (?)', [('a',), ('b',), ('c',)])
        self.assertEqual(con.execute('select twice(21)').fetchone()[0], 42)
        self.assertEqual(con.execute('select cat(v) from t').fetchone()[0], 'abc')
        con.close()

    def test_blob_backup_dump(self):
        con = sqlite3.connect(':memory:')
        con.execute('create table b (data blob)')
        con.execute('insert into b values (zeroblob(65536))')
        with con.blobopen('b', 'data', 1) as blob:
            blob.seek(1000)
            blob.write(b'libguard')
        con.commit()  # a backup waits for the source's open transaction
        self.assertEqual(con.execute('select substr(data, 1001, 8) from b').fetchone()[0],
                         b'libguard')
        dst = sqlite3.connect(self.path)
        con.backup(dst)
        self.assertEqual(dst.execute('select length(data) from b').fetchone()[0], 65536)
        self.assertTrue(any('CREATE TABLE b' in line for line in dst.iterdump()))
        dst.close()
        con.close()

    def test_error(self):
        con = sqlite3.connect(':memory:')
        with self.assertRaises(sqlite3.OperationalError):
            con.execute('select * from no_such_table')
        con.close()


if __name__ == '__main__':
    unittest.main()
