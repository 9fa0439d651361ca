-- Stored programs, as the mysql client reads them (DELIMITER lines).

DELIMITER //

-- fires BATCH007 (twice): a cursor loop that reads and writes one row per iteration
CREATE PROCEDURE refresh_user_summary()
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE v_user INT;
  DECLARE v_total DECIMAL(12,2);
  DECLARE users_cur CURSOR FOR SELECT id FROM users WHERE status = 1;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN users_cur;
  each_user: LOOP
    FETCH users_cur INTO v_user;
    IF done THEN
      LEAVE each_user;
    END IF;
    SELECT SUM(amount) INTO v_total FROM events WHERE user_id = v_user;
    UPDATE user_summary SET total = v_total WHERE user_id = v_user;
  END LOOP each_user;
  CLOSE users_cur;
END //

-- passes: the same refresh as one set-based statement
CREATE PROCEDURE refresh_user_summary_set()
BEGIN
  INSERT INTO user_summary (user_id, total)
  SELECT user_id, SUM(amount) FROM events GROUP BY user_id
  ON DUPLICATE KEY UPDATE total = VALUE(total);
END //

-- passes: purging in chunks is the right shape for a loop
CREATE PROCEDURE purge_old_notes()
BEGIN
  REPEAT
    DELETE FROM notes WHERE created_at < NOW() - INTERVAL 90 DAY ORDER BY id LIMIT 1000;
  UNTIL ROW_COUNT() = 0 END REPEAT;
END //

DELIMITER ;
